"""One blueprint per resource of the REST API."""
