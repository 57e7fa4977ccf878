"""Bearer tokens, per-token rate limits and concurrency caps.

A token is shown once, at creation; only its SHA-256 is kept: in the object
store (``tokens/<sha256>.json``, the system of record) and cached in Redis
(``expaudit:token:<sha256>``), and remembered by each web process for a
few seconds, so that verifying a busy token rarely costs a Redis read. No
function here logs a token or its hash.

Revoking writes the store first and then overwrites the cache entry with the
revoked record (a tombstone: a reader that fetched the old record cannot put
it back, because readers only add entries that are absent). When Redis does
not answer, a marker (``token-evictions/<sha256>``) stays in the store and
every web process writes the tombstone once Redis answers again, before it
trusts the cache; so a revoked token never comes back from a cache entry
that outlived an outage.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import re
import secrets
import time
from dataclasses import asdict, dataclass

import redis as redis_lib

from service.process import Attempt, defaults, tolerated
from service.errors import Conflict, NotFound, TooManyRequests, Unauthorized, ValidationFailed
from service.submissions import utc_now
from service.store import ObjectNotFound, ObjectStore

log = logging.getLogger(__name__)

TOKEN_PREFIX = "ea_"
"""Prefix of issued tokens, so a leaked one is recognisable in a secret scanner."""

ADMIN_ID = "admin"
"""Token id of the administrator token of the service config (`EXPAUDIT_ADMIN_TOKEN`)."""


EVICTIONS_PREFIX = "token-evictions/"
"""Store prefix of revocations whose cache entry is still to be overwritten."""

OWNER_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
"""An owner: lowercase letters, digits and ._- starting with a letter or digit (it is part of
store keys and Redis keys). The admin CLI and API lowercase what the operator types, so that
"Lab" and "lab" are one owner, not two quotas."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def normal_owner(owner: object) -> str:
    """`owner` as it is kept (lowercased); raises ValidationFailed (field `owner`) when it is
    missing or not an `OWNER_PATTERN`."""
    if not isinstance(owner, str) or not OWNER_PATTERN.fullmatch(owner.lower()):
        raise ValidationFailed("owner (who the token is for: its sealed quota and Ladder are "
                               "shared by every token of the owner) must be 1-64 letters, digits "
                               f"or ._- starting with a letter or digit, got {owner!r}",
                               field="owner")
    return owner.lower()


@dataclass(frozen=True)
class TokenInfo:
    """Who a request is: the token's public id and name, never the secret.

    `owner` is who the operator issued the token to: the sealed quota and the
    Ladder are kept per owner, so revoking a token and issuing another to the
    same owner starts neither afresh. A record written before owners existed
    has none; its owner is its own token id (`from_record`), which is where its
    quota and Ladder were kept, so nothing it had is lost.
    """

    token_id: str
    name: str
    admin: bool
    created_at: str
    revoked: bool = False
    owner: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict) -> "TokenInfo":
        """The info of a stored or cached record (one without an owner: its token id)."""
        return cls(**{**record, "owner": record.get("owner") or record["token_id"]})


class TokenRegistry:
    """Create, verify, list and revoke tokens."""

    def __init__(self, store: ObjectStore, redis: redis_lib.Redis | None,
                 admin_token: str | None, local_ttl_s: float = defaults.TOKEN_LOCAL_CACHE_S) -> None:
        self.store = store
        self.redis = redis
        self._admin_hash = hash_token(admin_token) if admin_token else None
        self.local_ttl_s = local_ttl_s
        self._local: dict[str, tuple[TokenInfo, float]] = {}
        self._evictions_checked = float("-inf")

    def create(self, name: str, owner: str, admin: bool = False) -> tuple[str, TokenInfo]:
        """Issue a token to `owner` (see `normal_owner`); returns (the secret, shown once; its
        info)."""
        owner = normal_owner(owner)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = hash_token(token)
        info = TokenInfo(token_id=self.token_id_for(digest), name=name, admin=admin,
                         created_at=utc_now(), owner=owner)
        self.store.put_bytes(f"tokens/{digest}.json", json.dumps(info.to_dict()).encode(),
                             "application/json")
        return token, info

    def token_id_for(self, digest: str) -> str:
        """The public id of the token with this SHA-256 (no lookup needed)."""
        if self._admin_hash is not None and hmac.compare_digest(digest, self._admin_hash):
            return ADMIN_ID
        return f"tok-{digest[:16]}"

    def authenticate(self, token: str) -> TokenInfo:
        """The token's info; raises Unauthorized for unknown or revoked tokens.

        Looks in this process's memory (a few seconds), then the Redis cache
        (minutes), then the store (the record).
        """
        digest = hash_token(token)
        if self.token_id_for(digest) == ADMIN_ID:
            return TokenInfo(token_id=ADMIN_ID, name="admin", admin=True, created_at="",
                             owner=ADMIN_ID)
        remembered = self._local.get(digest)
        if remembered is not None and remembered[1] > time.monotonic():
            return remembered[0]
        self._finish_evictions()
        cached = self._cached(digest)
        info = (TokenInfo.from_record(json.loads(cached)) if cached is not None
                else self._stored(digest))
        if info is None or info.revoked:
            raise Unauthorized("unknown or revoked token", field="Authorization")
        if len(self._local) > 10_000:
            self._local.clear()
        self._local[digest] = (info, self._remember_until())
        return info

    def _remember_until(self) -> float:
        """How long a verified token is remembered here: `local_ttl_s`, and never past the
        next look for revocations Redis missed, so that a cache entry read after an outage
        (it may predate a revocation made during it) is refused within `local_ttl_s` of
        that revocation, not up to twice as long."""
        until = time.monotonic() + self.local_ttl_s
        if self._evictions_checked > float("-inf"):  # -inf: Redis is down, the store was read
            until = min(until, self._evictions_checked + defaults.TOKEN_EVICTION_CHECK_S)
        return until

    def _redis_failed(self, attempt: Attempt) -> None:
        """After a failed Redis call (logged by `tolerated`), look for missed revocations on
        the next request: a revocation made while Redis was down left only a marker in the
        store, and the first cache entry read after the outage may be older than it."""
        if attempt.failed:
            self._evictions_checked = float("-inf")

    def _cached(self, digest: str) -> bytes | None:
        """The raw cache entry of a token hash, or None (also when Redis is down)."""
        if self.redis is None:
            return None
        cached = None
        with tolerated(log, "token cache unavailable (%s); reading the store") as attempt:
            cached = self.redis.get(f"expaudit:token:{digest}")
        self._redis_failed(attempt)
        return cached

    def _stored(self, digest: str) -> TokenInfo | None:
        try:
            info = TokenInfo.from_record(json.loads(self.store.get_bytes(f"tokens/{digest}.json")))
        except ObjectNotFound:
            return None
        if self.redis is not None:
            with tolerated(log, "token cache not updated (%s)") as attempt:
                # nx: never over a revocation's tombstone written since the store was read
                self.redis.set(f"expaudit:token:{digest}", json.dumps(info.to_dict()),
                               ex=defaults.TOKEN_CACHE_TTL_S, nx=True)
            self._redis_failed(attempt)
        return info

    def list(self) -> list[TokenInfo]:
        infos = [TokenInfo.from_record(json.loads(self.store.get_bytes(key)))
                 for key in self.store.list_keys("tokens/")]
        return sorted(infos, key=lambda i: (i.created_at, i.token_id))

    def revoke(self, token_id: str) -> TokenInfo:
        """Mark a token revoked in the store and overwrite its cache entry.

        Revoking a revoked token again writes its tombstone again, then
        raises `Conflict` (already revoked): a retried revocation finishes
        what the first one could not. When Redis does not answer, the
        revocation still holds: the store refuses the token while Redis is
        down, and a marker makes every web process write the tombstone before
        it reads the cache again.
        """
        for key in self.store.list_keys("tokens/"):
            info = TokenInfo.from_record(json.loads(self.store.get_bytes(key)))
            if info.token_id != token_id:
                continue
            digest = key[len("tokens/"):-len(".json")]
            revoked = TokenInfo(**{**info.to_dict(), "revoked": True})
            if not info.revoked:
                self.store.put_bytes(key, json.dumps(revoked.to_dict()).encode(), "application/json")
            self._local.pop(digest, None)
            if not self._tombstone(digest, revoked):
                self.store.put_bytes(f"{EVICTIONS_PREFIX}{digest}", b"")
                self._evictions_checked = float("-inf")
            if info.revoked:
                raise Conflict(f"token '{token_id}' is already revoked (its cache entry is "
                               "overwritten again)", field="token_id")
            return revoked
        raise NotFound(f"no token with id '{token_id}'", field="token_id")

    def _tombstone(self, digest: str, revoked: TokenInfo) -> bool:
        """Overwrite the cache entry with the revoked record; False when Redis does not answer."""
        if self.redis is None:
            return True
        with tolerated(log, "token cache unavailable (%s); revocation completed later") as attempt:
            self.redis.set(f"expaudit:token:{digest}", json.dumps(revoked.to_dict()),
                           ex=defaults.TOKEN_CACHE_TTL_S)
        self._redis_failed(attempt)
        return not attempt.failed

    def _finish_evictions(self) -> None:
        """Write the tombstones of revocations Redis missed (checked every few seconds, and on
        every request while one is still pending)."""
        if self.redis is None or time.monotonic() - self._evictions_checked < defaults.TOKEN_EVICTION_CHECK_S:
            return
        done = True
        for key in self.store.list_keys(EVICTIONS_PREFIX):
            digest = key[len(EVICTIONS_PREFIX):]
            self._local.pop(digest, None)
            try:
                revoked = TokenInfo.from_record(
                    json.loads(self.store.get_bytes(f"tokens/{digest}.json")))
            except ObjectNotFound:
                self.store.delete(key)
                continue
            if self._tombstone(digest, revoked):
                self.store.delete(key)
            else:
                done = False
        self._evictions_checked = time.monotonic() if done else float("-inf")


@dataclass
class _Window:
    """This process's view of one token's current rate-limit window."""

    index: int
    known: int = 0
    """The shared count in Redis at the last flush (all processes)."""
    pending: int = 0
    """Requests counted here and not yet added to Redis."""
    flushed_at: float = float("-inf")
    unavailable: bool = False
    """The last flush failed: requests pass until Redis answers again."""


class RateLimiter:
    """Fixed-window request counter per token, shared through Redis in small batches.

    Each process counts requests locally and adds them to the shared Redis
    counter (INCRBY) every `flush_every` requests or `flush_interval_s`
    seconds, whichever comes first, and always on a token's first request in
    a window. A request is refused when the shared count plus the local
    unflushed count passes the limit; with P web processes the limit can be
    overshot by at most P x `flush_every` requests, and a busy token costs
    one Redis round trip per batch instead of one per request.

    When Redis is unreachable the limiter lets requests through (and logs):
    Redis is a cache here, and refusing every request because a counter is
    unavailable would take the whole API down with it.
    """

    def __init__(self, redis: redis_lib.Redis | None, per_minute: int,
                 window_s: int = defaults.RATE_LIMIT_WINDOW_S,
                 flush_every: int = defaults.RATE_LIMIT_FLUSH_REQUESTS,
                 flush_interval_s: float = defaults.RATE_LIMIT_FLUSH_INTERVAL_S) -> None:
        self.redis = redis
        self.per_window = per_minute * window_s // 60
        self.window_s = window_s
        self.flush_every = flush_every
        self.flush_interval_s = flush_interval_s
        self._windows: dict[str, _Window] = {}

    def hit(self, token_id: str) -> None:
        """Count one request; raises TooManyRequests past the limit."""
        if self.redis is None:
            return
        now = time.time()
        index = int(now // self.window_s)
        window = self._windows.get(token_id)
        if window is None or window.index != index:
            if len(self._windows) > 10_000:
                self._windows.clear()
            window = self._windows[token_id] = _Window(index)
        window.pending += 1
        if window.pending >= self.flush_every or now - window.flushed_at >= self.flush_interval_s:
            self._flush(token_id, window, now)
        if not window.unavailable and window.known + window.pending > self.per_window:
            retry_after = self.window_s - int(now) % self.window_s
            raise TooManyRequests(
                f"rate limit of {self.per_window} requests per {self.window_s} s exceeded; "
                f"retry in {retry_after} s", field="Authorization",
                extra={"retry_after": retry_after})

    def _flush(self, token_id: str, window: _Window, now: float) -> None:
        """Add the pending count to the shared counter: one INCRBY; the process whose INCRBY
        created the key (the count came back equal to what it added) also sets its expiry,
        so the busy case costs one command and a key re-created after Redis lost it expires."""
        key = f"expaudit:rate:{token_id}:{window.index}"
        with tolerated(log, "rate limiter unavailable (%s); requests allowed") as attempt:
            window.known = int(self.redis.incrby(key, window.pending))
            if window.known == window.pending:
                self.redis.expire(key, self.window_s + 1)
            window.pending, window.unavailable = 0, False
        if attempt.failed:
            window.known, window.pending, window.unavailable = 0, 0, True
        window.flushed_at = now


def client_address(peer: str | None, forwarded_for: str | None, trusted_proxies: int = 0) -> str:
    """The address invalid tokens are counted against.

    The peer's address, unless `trusted_proxies` (EXPAUDIT_TRUSTED_PROXIES:
    the reverse proxies in front of the service, each appending the address
    it saw to `X-Forwarded-For`) is N > 0: then the Nth address from the end
    of that header, the one the outermost trusted proxy saw. Off by default:
    `X-Forwarded-For` is a header any client can write, and a peer's network
    says nothing (behind Docker's port publishing every client's peer is the
    bridge gateway). A header with fewer than N entries, or an entry that is
    not an IP address, counts as the peer.
    """
    peer = peer or "unknown"
    if trusted_proxies <= 0 or not forwarded_for:
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",")]
    if len(hops) < trusted_proxies:
        return peer
    try:
        return str(ipaddress.ip_address(hops[-trusted_proxies]))
    except ValueError:
        return peer


class FailedAuthLimiter:
    """Bearer tokens that fail to verify, counted per client address; past the limit, every
    token from that address is refused with 429 for `window_s` seconds.

    An unknown token costs a store read (no cache can hold what does not
    exist), so guessing is both a brute-force attempt and a load on the
    store. Count and block live in Redis, shared by every web process: the
    count (``expaudit:authfail:<address>``, one INCR per failure) expires
    `window_s` after an address's first failure, and the failure past the
    limit sets a block (``expaudit:authblock:<address>``, SET ... EX
    `window_s`) that every request with a token checks first (one TTL read),
    so a right guess from a blocked address is refused too, by every
    process. Nothing is kept in process memory. When Redis is unreachable
    failures are neither counted nor refused (like `RateLimiter`).
    """

    def __init__(self, redis: redis_lib.Redis | None, per_minute: int,
                 window_s: int = defaults.RATE_LIMIT_WINDOW_S) -> None:
        self.redis = redis
        self.per_window = per_minute * window_s // 60
        self.window_s = window_s

    def _refusal(self, retry_after: int) -> TooManyRequests:
        return TooManyRequests(f"more than {self.per_window} invalid tokens from this address in "
                               f"{self.window_s} s; retry in {retry_after} s", field="Authorization",
                               extra={"retry_after": retry_after})

    def check(self, client: str) -> None:
        """Raise TooManyRequests while `client` is blocked (by any process)."""
        if self.redis is None:
            return
        with tolerated(log, "invalid-token block unavailable (%s)") as attempt:
            remaining = int(self.redis.ttl(f"expaudit:authblock:{client}"))
        if not attempt.failed and remaining > 0:
            raise self._refusal(remaining)

    def failed(self, client: str) -> None:
        """Count one failed verification from `client`; raises TooManyRequests past the limit."""
        if self.redis is None:
            return
        key = f"expaudit:authfail:{client}"
        with tolerated(log, "invalid-token counter unavailable (%s)") as attempt:
            pipe = self.redis.pipeline(transaction=True)
            pipe.set(key, 0, ex=self.window_s, nx=True)  # the window starts at the first failure
            pipe.incr(key)
            count = int(pipe.execute()[1])
            if count > self.per_window:
                self.redis.set(f"expaudit:authblock:{client}", 1, ex=self.window_s)
        if not attempt.failed and count > self.per_window:
            raise self._refusal(self.window_s)


def authenticate_request(registry: TokenRegistry, limiter: RateLimiter, token: str) -> TokenInfo:
    """Verify `token` and count the request against its rate limit.

    A busy token usually needs no Redis round trip at all: its info is
    remembered by this process for a few seconds and its requests are
    counted in batches.
    """
    info = registry.authenticate(token)
    limiter.hit(info.token_id)
    return info


_RESERVE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
if redis.call('SCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1
"""
"""Take a slot under the cap in one step: count the owner's open submissions and live
reservations, and add a reservation only when the sum is below the cap."""


class ActiveSubmissions:
    """The set of an owner's submissions that are not final, for the concurrency cap.

    Kept in Redis (``expaudit:active:<owner>``); the reconciler re-adds open
    submissions after Redis was lost, and the jobs remove final ones. A
    create request takes its slot atomically before it reads the upload
    (`reserve`: a Lua script counts and reserves in one step, so concurrent
    requests cannot all pass a count taken before any of them was added),
    turns it into its submission id once stored (`commit`) and gives it back
    otherwise (`release`). A reservation lapses on its own after
    `ACTIVE_RESERVATION_TTL_S`, should its request die midway.
    """

    def __init__(self, redis: redis_lib.Redis | None) -> None:
        self.redis = redis

    @staticmethod
    def _key(owner: str) -> str:
        return f"expaudit:active:{owner}"

    @staticmethod
    def _pending_key(owner: str) -> str:
        return f"expaudit:active-pending:{owner}"

    def reserve(self, owner: str, limit: int) -> str | None:
        """Take one of `owner`'s `limit` slots; returns the reservation (None when Redis is
        down: the submission is let through uncounted). Raises TooManyRequests when none is free."""
        if self.redis is None:
            return None
        reservation = secrets.token_hex(8)
        now = time.time()
        with tolerated(log, "concurrency cap unavailable (%s); submission allowed") as attempt:
            taken = self.redis.eval(_RESERVE, 2, self._key(owner), self._pending_key(owner), limit,
                                    now, now + defaults.ACTIVE_RESERVATION_TTL_S, reservation,
                                    defaults.ACTIVE_RESERVATION_TTL_S)
        if attempt.failed:
            return None
        if not taken:
            raise TooManyRequests(f"at most {limit} submissions may be queued or running per token; "
                                  "wait for one to finish", field="file", code="too_many_active")
        return reservation

    def commit(self, owner: str, reservation: str | None, sid: str) -> None:
        """The reserved slot becomes submission `sid` (one transaction)."""
        if self.redis is None:
            return
        pipe = self.redis.pipeline(transaction=True)
        pipe.sadd(self._key(owner), sid)
        if reservation is not None:
            pipe.zrem(self._pending_key(owner), reservation)
        pipe.execute()

    def release(self, owner: str, reservation: str | None) -> None:
        """Give back a reservation that did not become a submission (no-op once committed)."""
        if self.redis is None or reservation is None:
            return
        with tolerated(log, "reservation not given back (%s); it lapses on its own"):
            self.redis.zrem(self._pending_key(owner), reservation)

    def add(self, owner: str, sid: str) -> None:
        if self.redis is not None:
            self.redis.sadd(self._key(owner), sid)

    def remove(self, owner: str, sid: str) -> None:
        if self.redis is not None:
            self.redis.srem(self._key(owner), sid)
