"""Operations: health, Prometheus metrics, the OpenAPI document and its page.

`/healthz` reads and writes the store (a probe object of this process,
written and deleted) and pings Redis: a store that reads but refuses writes
cannot take submissions, so it counts as down.
"""

from __future__ import annotations

import os

import redis as redis_lib
from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service.context import services
from service.openapi import docs_page, openapi_document
from service.storage import StoreError, StoreUnavailable

api = Blueprint("ops", __name__)
root = Blueprint("root", __name__)


@api.get("/openapi.json")
def openapi_json():
    return jsonify(openapi_document())


@api.get("/docs")
def api_docs():
    return Response(docs_page(openapi_document()), mimetype="text/html")


@root.get("/healthz")
def healthz():
    svc = services()
    checks = {}
    try:
        svc.store.exists("leaderboard/index.json")
        svc.store.check_writable(f"healthz/probe-{os.getpid()}")  # a store that only reads is down
        checks["store"] = "ok"
    except StoreUnavailable as exc:
        checks["store"] = f"unavailable: {exc.reason}"
    except (StoreError, OSError) as exc:
        checks["store"] = f"unavailable: {type(exc).__name__}"
    try:
        svc.redis.ping()
        checks["redis"] = "ok"
    except redis_lib.RedisError as exc:
        checks["redis"] = f"unavailable: {type(exc).__name__}"
    healthy = all(v == "ok" for v in checks.values())
    return jsonify({"status": "ok" if healthy else "degraded", **checks}), 200 if healthy else 503


@root.get("/metrics")
def metrics():
    return Response(generate_latest(services().metrics.registry), mimetype=CONTENT_TYPE_LATEST)
