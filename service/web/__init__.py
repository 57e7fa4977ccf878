"""The web process: the Flask app factory (`app.create_app`) and one blueprint per resource."""
