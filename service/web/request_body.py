"""WSGI middleware on the way in: request bodies of known length, and the app served at the root.

Bodies sent without a Content-Length (chunked) are held to the upload limit like any other.

Werkzeug stops reading a chunked body at `MAX_CONTENT_LENGTH` without an
error, so an over-limit upload would arrive cut short and could pass as a
smaller, valid file. This middleware reads such a body up to one byte past
the limit before the app sees it and hands the app a body of known length:
the whole body when it fits, and otherwise a declared length over the limit,
which the app refuses with its usual 413 (`too_large`, field `body`).
"""

from __future__ import annotations

import io


class BoundedBody:
    """WSGI middleware: give every request body a Content-Length, reading at most `limit` + 1 bytes
    (`limit`: bytes, or a function returning them, read per request)."""

    def __init__(self, app, limit) -> None:
        self.app = app
        self.limit = limit

    def __call__(self, environ, start_response):
        if not environ.get("CONTENT_LENGTH") and _chunked(environ):
            limit = self.limit() if callable(self.limit) else self.limit
            stream = environ["wsgi.input"]
            chunks, size = [], 0
            while size <= limit:
                chunk = stream.read(min(64 * 1024, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            body = b"".join(chunks)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))  # over the limit when it did not fit
            environ.pop("HTTP_TRANSFER_ENCODING", None)
            environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)


def _chunked(environ) -> bool:
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()


class FixedScriptName:
    """WSGI middleware: the app is served at the root, whatever a `SCRIPT_NAME` request
    header says.

    gunicorn maps a `SCRIPT_NAME` header from a trusted address (by default
    127.0.0.1) into the environment: a prefix of the path would shift the
    routes and go into every link the app writes (`status_url`, `Location`).
    The path is given back its prefix and the script name emptied, so the
    header changes nothing. (A header that is no prefix of the path makes
    gunicorn fail before the app is called; `service.process.gunicorn_conf` drops
    the header for that.)
    """

    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, environ, start_response):
        script_name = environ.get("SCRIPT_NAME", "")
        if script_name:
            environ["PATH_INFO"] = script_name + environ.get("PATH_INFO", "")
            environ["SCRIPT_NAME"] = ""
        return self.app(environ, start_response)
