"""The per-app bundle of connections and helpers the request handlers use."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis as redis_lib
from flask import current_app, g, request

from service.auth import (ActiveSubmissions, RateLimiter, TokenInfo, TokenRegistry, authenticate_request)
from service.catalog import Catalog
from service.errors import Forbidden, Unauthorized
from service.process import Metrics, ServiceConfig
from service.submissions import AuditOptions, RecordCache, SubmissionRepo
from service.store import ObjectStore


@dataclass
class Services:
    """Everything a request handler needs; built once by `create_app`."""

    config: ServiceConfig
    store: ObjectStore
    redis: redis_lib.Redis
    catalog: Catalog
    tokens: TokenRegistry
    limiter: RateLimiter
    active: ActiveSubmissions
    metrics: Metrics
    records: RecordCache = field(default_factory=RecordCache)

    @property
    def repo(self) -> SubmissionRepo:
        return SubmissionRepo(self.store, self.records)

    @property
    def audit_options(self) -> AuditOptions:
        return AuditOptions(self.config.n_shuffles, self.config.n_bootstrap)


def services() -> Services:
    return current_app.extensions["expaudit"]


def _bearer() -> str | None:
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'", field="Authorization")
    return token.strip()


def current_token(required: bool = True) -> TokenInfo | None:
    """The authenticated caller (rate-limited per token); None for anonymous reads."""
    if "token" in g:
        return g.token
    token = _bearer()
    if token is None:
        if required:
            raise Unauthorized("this endpoint needs a bearer token", field="Authorization")
        g.token = None
        return None
    svc = services()
    info = authenticate_request(svc.tokens, svc.limiter, token)
    g.token = info
    return info


def require_admin() -> TokenInfo:
    info = current_token(required=True)
    if not info.admin:
        raise Forbidden("this endpoint needs the admin token", field="Authorization")
    return info
