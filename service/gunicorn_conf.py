"""gunicorn settings of the web process (`gunicorn -c python:service.gunicorn_conf`).

`forwarder_headers` is emptied: by default gunicorn takes `SCRIPT_NAME` and
`PATH_INFO` headers from clients on 127.0.0.1 (its trusted proxy list) and
answers 500 when the script name is no prefix of the path. The service is
served at the root (a proxy that publishes it under a prefix strips the
prefix), so these headers are dropped like any other header with an
underscore; `service.request_body.FixedScriptName` ignores a script name
that reaches the app some other way.
"""

forwarder_headers = ""
