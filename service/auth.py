"""Bearer tokens, per-token rate limits and concurrency caps.

A token is shown once, at creation; only its SHA-256 is kept: in the object
store (``tokens/<sha256>.json``, the system of record) and cached in Redis
(``expaudit:token:<sha256>``) so that verifying a request costs one Redis
read. No function here logs a token or its hash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import asdict, dataclass

import redis as redis_lib

from service import defaults
from service.errors import Conflict, NotFound, TooManyRequests, Unauthorized
from service.records import utc_now
from service.storage import ObjectNotFound, ObjectStore

log = logging.getLogger(__name__)

TOKEN_PREFIX = "ea_"
"""Prefix of issued tokens, so a leaked one is recognisable in a secret scanner."""

ADMIN_ID = "admin"
"""Token id of the administrator token configured in the settings."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    """Who a request is: the token's public id and name, never the secret."""

    token_id: str
    name: str
    admin: bool
    created_at: str
    revoked: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


class TokenRegistry:
    """Create, verify, list and revoke tokens."""

    def __init__(self, store: ObjectStore, redis: redis_lib.Redis | None,
                 admin_token: str | None) -> None:
        self.store = store
        self.redis = redis
        self._admin_hash = hash_token(admin_token) if admin_token else None

    def create(self, name: str, admin: bool = False) -> tuple[str, TokenInfo]:
        """Issue a token; returns (the secret, shown once; its info)."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = hash_token(token)
        info = TokenInfo(token_id=self.token_id_for(digest), name=name, admin=admin, created_at=utc_now())
        self.store.put_bytes(f"tokens/{digest}.json", json.dumps(info.to_dict()).encode(),
                             "application/json")
        return token, info

    def token_id_for(self, digest: str) -> str:
        """The public id of the token with this SHA-256 (no lookup needed)."""
        if self._admin_hash is not None and hmac.compare_digest(digest, self._admin_hash):
            return ADMIN_ID
        return f"tok-{digest[:16]}"

    def authenticate(self, token: str) -> TokenInfo:
        """The token's info; raises Unauthorized for unknown or revoked tokens."""
        digest = hash_token(token)
        return self.verify(digest, None if self.token_id_for(digest) == ADMIN_ID else self._cached(digest))

    def verify(self, digest: str, cached: bytes | None) -> TokenInfo:
        """The info of the token with hash `digest`, from the cache entry `cached` or the store."""
        if self.token_id_for(digest) == ADMIN_ID:
            return TokenInfo(token_id=ADMIN_ID, name="admin", admin=True, created_at="")
        info = TokenInfo(**json.loads(cached)) if cached is not None else self._stored(digest)
        if info is None or info.revoked:
            raise Unauthorized("unknown or revoked token", field="Authorization")
        return info

    def _cached(self, digest: str) -> bytes | None:
        """The raw cache entry of a token hash, or None (also when Redis is down)."""
        if self.redis is None:
            return None
        try:
            return self.redis.get(f"expaudit:token:{digest}")
        except redis_lib.RedisError as exc:
            log.warning("token cache unavailable (%s); reading the store", type(exc).__name__)
            return None

    def _stored(self, digest: str) -> TokenInfo | None:
        try:
            info = TokenInfo(**json.loads(self.store.get_bytes(f"tokens/{digest}.json")))
        except ObjectNotFound:
            return None
        if self.redis is not None:
            try:
                self.redis.set(f"expaudit:token:{digest}", json.dumps(info.to_dict()),
                               ex=defaults.TOKEN_CACHE_TTL_S)
            except redis_lib.RedisError as exc:
                log.warning("token cache not updated (%s)", type(exc).__name__)
        return info

    def list(self) -> list[TokenInfo]:
        infos = [TokenInfo(**json.loads(self.store.get_bytes(key)))
                 for key in self.store.list_keys("tokens/")]
        return sorted(infos, key=lambda i: (i.created_at, i.token_id))

    def revoke(self, token_id: str) -> TokenInfo:
        """Mark a token revoked in the store and drop it from the cache."""
        for key in self.store.list_keys("tokens/"):
            info = TokenInfo(**json.loads(self.store.get_bytes(key)))
            if info.token_id != token_id:
                continue
            if info.revoked:
                raise Conflict(f"token '{token_id}' is already revoked", field="token_id")
            revoked = TokenInfo(**{**info.to_dict(), "revoked": True})
            self.store.put_bytes(key, json.dumps(revoked.to_dict()).encode(), "application/json")
            if self.redis is not None:
                digest = key[len("tokens/"):-len(".json")]
                self.redis.delete(f"expaudit:token:{digest}")
            return revoked
        raise NotFound(f"no token with id '{token_id}'", field="token_id")


class RateLimiter:
    """Fixed-window request counter per token in Redis.

    When Redis is unreachable the limiter lets requests through (and logs):
    Redis is a cache here, and refusing every request because a counter is
    unavailable would take the whole API down with it.
    """

    def __init__(self, redis: redis_lib.Redis | None, per_minute: int,
                 window_s: int = defaults.RATE_LIMIT_WINDOW_S) -> None:
        self.redis = redis
        self.per_window = per_minute * window_s // 60
        self.window_s = window_s

    def queue(self, pipe, token_id: str) -> None:
        """Add this request's count to `pipe` (the first result of the two is the count)."""
        key = f"expaudit:rate:{token_id}:{int(time.time() // self.window_s)}"
        pipe.incr(key)
        pipe.expire(key, self.window_s + 1)

    def check(self, count: int | None) -> None:
        """Raise TooManyRequests when `count` (None: not counted) is past the limit."""
        if count is None or count <= self.per_window:
            return
        retry_after = self.window_s - int(time.time()) % self.window_s
        raise TooManyRequests(
            f"rate limit of {self.per_window} requests per {self.window_s} s exceeded; "
            f"retry in {retry_after} s", field="Authorization", extra={"retry_after": retry_after})

    def hit(self, token_id: str) -> None:
        """Count one request; raises TooManyRequests past the limit."""
        if self.redis is None:
            return
        try:
            pipe = self.redis.pipeline(transaction=False)
            self.queue(pipe, token_id)
            count = pipe.execute()[0]
        except redis_lib.RedisError as exc:
            log.warning("rate limiter unavailable (%s); request allowed", type(exc).__name__)
            return
        self.check(count)


def authenticate_request(registry: TokenRegistry, limiter: RateLimiter, token: str) -> TokenInfo:
    """Verify `token` and count the request against its rate limit.

    The token cache lookup and the rate counter share one Redis round trip
    (a token's id is derived from its hash, so the counter key is known
    before the lookup). Without Redis, the token is verified from the store
    and the request is not counted.
    """
    digest = hash_token(token)
    token_id = registry.token_id_for(digest)
    cached, count = None, None
    if registry.redis is not None and limiter.redis is not None:
        try:
            pipe = registry.redis.pipeline(transaction=False)
            pipe.get(f"expaudit:token:{digest}")
            limiter.queue(pipe, token_id)
            cached, count, _ = pipe.execute()
        except redis_lib.RedisError as exc:
            log.warning("token cache and rate limiter unavailable (%s)", type(exc).__name__)
    info = registry.verify(digest, cached)
    limiter.check(count)
    return info


class ActiveSubmissions:
    """The set of an owner's submissions that are not final, for the concurrency cap.

    Kept in Redis (``expaudit:active:<owner>``); the reconciler re-adds open
    submissions after Redis was lost, and the jobs remove final ones.
    """

    def __init__(self, redis: redis_lib.Redis | None) -> None:
        self.redis = redis

    @staticmethod
    def _key(owner: str) -> str:
        return f"expaudit:active:{owner}"

    def count(self, owner: str) -> int:
        if self.redis is None:
            return 0
        try:
            return int(self.redis.scard(self._key(owner)))
        except redis_lib.RedisError as exc:
            log.warning("concurrency cap unavailable (%s); submission allowed", type(exc).__name__)
            return 0

    def add(self, owner: str, sid: str) -> None:
        if self.redis is not None:
            self.redis.sadd(self._key(owner), sid)

    def remove(self, owner: str, sid: str) -> None:
        if self.redis is not None:
            self.redis.srem(self._key(owner), sid)
