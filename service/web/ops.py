"""Operations: health, Prometheus metrics, the upload limit, the OpenAPI document and its page.

`/healthz` reads the store, checks that it takes a write (a probe object of
this process, written and deleted) and pings Redis: a store that reads but
refuses writes cannot take submissions, so it counts as down. A successful
write check is remembered by the process for `HEALTHZ_WRITE_CHECK_S`, so an
anonymous probe polled every second does not write the store each time; a
failed one is not remembered, and a store write refused to any request of
the process forgets the last success (`forget_writable`). The probe holds
`HEALTHZ_PROBE_BYTES`: an empty object still fits on a full file system.

`/metrics` answers only in an app built with `metrics_route=True` (the default, for a
web process behind a proxy that hides it, as compose's nginx does); `expaudit serve`
builds its app without it unless told (`--public-metrics`), and serves the metrics on a
port of their own (`--metrics-port`). In the Prometheus client's multiprocess mode a
scrape adds up every web process's counts (`service.process.metrics`).
"""

from __future__ import annotations

import logging
import os
import time

from flask import Blueprint, Flask, Response, current_app, jsonify
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import NotFound

from service.process import defaults, tolerated
from service.web.context import services
from service.web.openapi import docs_page, openapi_document
from service.store import StoreError, StoreUnavailable

api = Blueprint("ops", __name__)
root = Blueprint("root", __name__)

log = logging.getLogger(__name__)


@api.get("/openapi.json")
def openapi_json():
    return jsonify(openapi_document())


@api.get("/docs")
def api_docs():
    return Response(docs_page(openapi_document()), mimetype="text/html")


BODY_LIMIT = "expaudit.body_limit"
"""`app.extensions` key: the app's request body limit (`service.submissions.BodyLimit`)."""


@api.get("/limits")
def limits():
    """What this server accepts, so a client can check an upload before sending it."""
    return jsonify({"max_upload_bytes": current_app.extensions[BODY_LIMIT]()})


@root.get("/healthz")
def healthz():
    svc = services()
    checks = {}
    try:
        svc.store.exists("leaderboard/index.json")
        _check_writable(svc.store)  # a store that only reads is down
        checks["store"] = "ok"
    except StoreUnavailable as exc:
        checks["store"] = f"unavailable: {exc.reason}"
    except (StoreError, OSError) as exc:
        checks["store"] = f"unavailable: {type(exc).__name__}"
    with tolerated(log, "health check: redis unavailable (%s)") as attempt:
        svc.redis.ping()
    checks["redis"] = "ok" if not attempt.failed else f"unavailable: {type(attempt.error).__name__}"
    healthy = all(v == "ok" for v in checks.values())
    return jsonify({"status": "ok" if healthy else "degraded", **checks}), 200 if healthy else 503


_WRITABLE_AT = "expaudit.store_writable_at"
"""`app.extensions` key: when this process last saw the store take the health probe's write."""


def _check_writable(store) -> None:
    """Raise when the store refuses a write; a success is trusted for `HEALTHZ_WRITE_CHECK_S`."""
    checked = current_app.extensions.get(_WRITABLE_AT, float("-inf"))
    if time.monotonic() - checked < defaults.HEALTHZ_WRITE_CHECK_S:
        return
    store.check_writable(f"healthz/probe-{os.getpid()}")
    current_app.extensions[_WRITABLE_AT] = time.monotonic()


def forget_writable(app: Flask) -> None:
    """The store refused a write: the next `/healthz` checks again."""
    app.extensions.pop(_WRITABLE_AT, None)


METRICS_ROUTE = "expaudit.metrics_route"
"""`app.extensions` key: whether this app answers `/metrics` (see `create_app`)."""


@root.get("/metrics")
def metrics():
    if not current_app.extensions.get(METRICS_ROUTE, True):
        raise NotFound()
    return Response(services().metrics.render(), mimetype=CONTENT_TYPE_LATEST)
