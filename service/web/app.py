"""The Flask application factory: `create_app(config, store=, redis=, catalog=)`.

Nothing happens at import. `create_app` reads the `ServiceConfig` (environment,
overridden by `config`), builds the connections it was not given, and
registers one blueprint per resource under `/api/v1`, the static leaderboard
route and one error handler that turns every domain error into
``{"error": {"code", "message", "field"}}``.

gunicorn runs it as ``gunicorn 'service.web.app:create_app()'``.
"""

from __future__ import annotations

import logging
import time

import redis as redis_lib
from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException

from leaderboard.errors import InputError
from leaderboard.scores import FieldError
from service.process import (ConfigError, Metrics, REDIS_ERRORS, RedisUnavailable, ServiceConfig,
                             defaults, from_env)
from service.auth import (ActiveSubmissions, FailedAuthLimiter, RateLimiter, TokenRegistry, client_address)
from service.catalog import Catalog, DataUnavailable, UnknownSetting, open_catalog
from service.web.context import Services
from service.errors import ServiceError, Unauthorized
from service.web.request_body import BoundedBody, FixedScriptName
from service.store import InvalidKey, ObjectNotFound, ObjectStore, StoreUnavailable, open_store
from service.submissions import BodyLimit
from service.web import admin, client_wheel, ops, selector_inputs, settings_routes, submissions
from service.web.client_wheel import ClientUnavailable
from service.web import leaderboard as leaderboard_routes
from service.web.ops import forget_writable

log = logging.getLogger(__name__)


def create_app(config: dict | None = None, *, store: ObjectStore | None = None,
               redis: redis_lib.Redis | None = None, catalog: Catalog | None = None,
               service_config: ServiceConfig | None = None, metrics_route: bool = True) -> Flask:
    """Build the service app.

    Args:
        config: overrides of `ServiceConfig` fields (tests pass a dict).
        store, redis, catalog: connections to use instead of building them
            from the service config.
        service_config: a complete `ServiceConfig` instead of reading the environment.
        metrics_route: whether `/metrics` answers (`expaudit serve` keeps it off its public
            port unless told: `service.web.ops`).
    """
    service_config = (service_config or from_env()).with_overrides(config)
    if store is None:
        store = open_store(service_config)
    if redis is None:
        if not service_config.redis_url:
            raise ConfigError("no Redis: set EXPAUDIT_REDIS_URL or pass redis=")
        redis = redis_lib.Redis.from_url(service_config.redis_url, socket_timeout=5,
                                         socket_connect_timeout=3)
    if catalog is None:
        catalog = open_catalog(service_config)
    body_limit = BodyLimit(catalog, service_config.max_upload_bytes)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = service_config.max_upload_bytes  # raised per request, below
    app.json.sort_keys = True
    app.extensions["expaudit"] = Services(
        config=service_config, store=store, redis=redis, catalog=catalog,
        tokens=TokenRegistry(store, redis, service_config.admin_token),
        limiter=RateLimiter(redis, service_config.rate_limit_per_minute),
        active=ActiveSubmissions(redis), metrics=Metrics(redis))
    app.extensions[_FAILED_AUTH] = FailedAuthLimiter(redis, defaults.FAILED_AUTH_PER_MINUTE)
    app.extensions[ops.METRICS_ROUTE] = metrics_route
    app.extensions[ops.BODY_LIMIT] = body_limit
    _register_blueprints(app)
    _register_error_handlers(app)
    _register_metrics_hooks(app)
    _register_failed_auth_hooks(app)
    _register_body_limit(app, body_limit)
    app.wsgi_app = FixedScriptName(BoundedBody(app.wsgi_app, body_limit))
    return app


def _register_body_limit(app: Flask, body_limit: BodyLimit) -> None:
    """The body limit of a request with a body is read when it comes (413 past it): it rises
    once the catalog can be read, also when it could not be when the process started. The
    catalog is sized at the first such request, then cached."""

    @app.before_request
    def set_body_limit():
        if request.method in ("POST", "PUT", "PATCH"):
            request.max_content_length = body_limit()


_FAILED_AUTH = "expaudit.failed_auth"


def _register_failed_auth_hooks(app: Flask) -> None:
    """Invalid bearer tokens are counted per client address (`client_address`, with the
    deployment's trusted proxies); past the limit every token from it is refused (429 with
    Retry-After) for a window, by every web process."""
    failures: FailedAuthLimiter = app.extensions[_FAILED_AUTH]
    trusted_proxies = app.extensions["expaudit"].config.trusted_proxies

    def client() -> str:
        return client_address(request.remote_addr, request.headers.get("X-Forwarded-For"),
                              trusted_proxies)

    @app.before_request
    def refuse_blocked_address():
        if request.headers.get("Authorization"):
            failures.check(client())

    @app.errorhandler(Unauthorized)
    def unauthorized(exc: Unauthorized):
        if request.headers.get("Authorization"):
            try:
                failures.failed(client())
            except ServiceError as refusal:
                exc = refusal
        return _service_error_response(exc)


def _register_blueprints(app: Flask) -> None:
    for module in (settings_routes, selector_inputs, submissions, leaderboard_routes, admin, ops):
        app.register_blueprint(module.api, url_prefix=defaults.API_PREFIX)
    app.register_blueprint(leaderboard_routes.site)
    app.register_blueprint(ops.root)
    app.register_blueprint(client_wheel.site)


def _error(status: int, code: str, message: str, field: str | None = None, **extra):
    body = {"code": code, "message": message, "field": field}
    body.update(extra)
    return jsonify({"error": body}), status


def _service_error_response(exc: ServiceError):
    response = jsonify(exc.to_dict())
    if "retry_after" in exc.extra:
        response.headers["Retry-After"] = str(exc.extra["retry_after"])
    return response, exc.status


def _register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError):
        return _service_error_response(exc)

    @app.errorhandler(InputError)
    def input_error(exc: InputError):
        return _error(422, "invalid_scores", str(exc), exc.field, source=exc.source,
                      line=exc.line, value=exc.value)

    @app.errorhandler(FieldError)
    def field_error(exc: FieldError):
        return _error(422, "invalid", exc.message, exc.field)

    @app.errorhandler(UnknownSetting)
    def unknown_setting(exc: UnknownSetting):
        return _error(404, "not_found", str(exc), exc.field)

    @app.errorhandler(DataUnavailable)
    def data_unavailable(exc: DataUnavailable):
        return _error(404, "not_available", str(exc), "setting_id")

    @app.errorhandler(ClientUnavailable)
    def client_unavailable(exc: ClientUnavailable):
        return _error(404, "not_available", str(exc), "filename")

    @app.errorhandler(ObjectNotFound)
    def missing_object(exc: ObjectNotFound):
        return _error(404, "not_found", "not found")

    @app.errorhandler(InvalidKey)
    def invalid_key(exc: InvalidKey):
        return _error(404, "not_found", "not found: the id or path has characters no object can have",
                      "path")

    @app.errorhandler(StoreUnavailable)
    def store_down(exc: StoreUnavailable):
        forget_writable(app)
        log.warning("object store unavailable: %s", exc)
        response, status = _error(503, "unavailable", f"the object store is unavailable "
                                  f"({exc.reason}); retry shortly")
        response.headers["Retry-After"] = "5"
        return response, status

    def redis_down(exc: Exception):
        cause = exc.cause if isinstance(exc, RedisUnavailable) else type(exc).__name__
        log.warning("redis unavailable: %s", cause)
        return _error(503, "unavailable", "the queue is unavailable; retry shortly")

    for redis_error in (*REDIS_ERRORS, RedisUnavailable):  # the table: service.process.redis_errors
        app.register_error_handler(redis_error, redis_down)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        if exc.code == 413:
            return _too_large()
        code = {404: "not_found", 405: "method_not_allowed",
                500: "internal_error"}.get(exc.code, "bad_request")
        response, status = _error(exc.code or 400, code, exc.description or exc.name)
        if exc.code == 405 and getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response, status


def _too_large():
    """413 naming the upload (its `filename` where the request gives it), its size and this
    server's limit (also at `GET /api/v1/limits`, which the client reads before sending)."""
    limit, size = request.max_content_length, request.content_length
    name = request.args.get("filename")
    what = f"the upload '{name[:120]}'" if name else "the request body"
    sized = f" is {size:,} bytes," if size is not None else " is"
    mib = f" ({limit / 2**20:.1f} MiB)" if limit >= 2**20 else ""
    return _error(413, "too_large", f"{what}{sized} over this server's upload limit of "
                  f"{limit:,} bytes{mib}", "body", limit_bytes=limit, size_bytes=size)


def _register_metrics_hooks(app: Flask) -> None:
    metrics: Metrics = app.extensions["expaudit"].metrics

    @app.before_request
    def start_timer():
        g.started = time.perf_counter()

    @app.after_request
    def count(response):
        endpoint = request.endpoint or "unmatched"
        metrics.requests.labels(request.method, endpoint, str(response.status_code)).inc()
        if "started" in g:
            metrics.latency.labels(endpoint).observe(time.perf_counter() - g.started)
        return response
