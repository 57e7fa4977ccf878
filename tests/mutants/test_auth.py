"""Tokens, invalid-token blocks and the concurrency cap, down to what each answer says.

What mutation testing of the auth module showed untested: the order of the
token list, a revocation's cache entry and its marker, when missed
revocations are looked for, the fields and `retry_after` of refusals, the
warnings logged while Redis is down, the batching of rate-limit counts, the
client address behind proxies, and the reservation slots of the concurrency
cap (taken, committed, given back, lapsed).
"""

from __future__ import annotations

import json
import logging
import re

import pytest
import redis

from service.auth import tokens as auth_module
from service.process import defaults
from service.auth.tokens import (EVICTIONS_PREFIX, ActiveSubmissions, FailedAuthLimiter, RateLimiter,
                          TokenInfo, TokenRegistry, client_address, hash_token)
from service.errors import Conflict, NotFound, TooManyRequests, Unauthorized
from service.store.storage import LocalStore
from tests.support.manual_clock import ManualClock
from tests.support.servers import RedisServer


@pytest.fixture
def redis_down(tmp_path):
    """A connection to a port where no Redis listens (yet)."""
    server = RedisServer(tmp_path / "redis-down")
    conn = redis.Redis(port=server.port, socket_connect_timeout=0.5)
    yield conn
    conn.close()


@pytest.fixture
def clock(monkeypatch) -> ManualClock:
    fake = ManualClock()
    monkeypatch.setattr(auth_module, "time", fake)
    return fake


def _transactions(monkeypatch, conn) -> list:
    """Record the `transaction` argument of each pipeline opened on `conn`."""
    opened, original = [], conn.pipeline

    def pipeline(transaction=True, shard_hint=None):
        opened.append(transaction)
        return original(transaction=transaction, shard_hint=shard_hint)

    monkeypatch.setattr(conn, "pipeline", pipeline)
    return opened


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "service.auth.tokens"]


class RecordingStore(LocalStore):
    """A local store that remembers the content type of each write and counts reads and listings."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.content_types: dict[str, str] = {}
        self.reads = 0
        self.listings: list[str] = []

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        self.content_types[key] = content_type
        super().put_bytes(key, data, content_type)

    def get_bytes(self, key):
        self.reads += 1
        return super().get_bytes(key)

    def list_keys(self, prefix=""):
        self.listings.append(prefix)
        return super().list_keys(prefix)


@pytest.fixture
def recording(tmp_path) -> RecordingStore:
    return RecordingStore(tmp_path / "recorded")


def _failing(*args, **kwargs):
    raise redis.ConnectionError("refused")


# ------------------------------------------------------------------ tokens


def test_tokens_are_listed_by_creation_time_then_id(store):
    registry = TokenRegistry(store, None, admin_token=None)
    records = [("f" * 64, "2026-01-02T00:00:00.000000Z"), ("0" * 64, "2026-01-03T00:00:00.000000Z"),
               ("a" * 64, "2026-01-02T00:00:00.000000Z")]
    for digest, created_at in records:
        info = TokenInfo(token_id=f"tok-{digest[:16]}", name=digest[0], admin=False, created_at=created_at)
        store.put_bytes(f"tokens/{digest}.json", json.dumps(info.to_dict()).encode())
    assert [i.name for i in registry.list()] == ["a", "f", "0"]


def test_a_revoked_record_and_its_cache_entry_are_json_with_the_cache_lifetime(tmp_path, redis_conn):
    store = RecordingStore(tmp_path / "store")
    registry = TokenRegistry(store, redis_conn, admin_token=None)
    token, info = registry.create("lab", "lab")
    key = next(iter(store.content_types))
    assert store.content_types[key] == "application/json"
    revoked = registry.revoke(info.token_id)
    assert revoked.revoked and store.content_types[key] == "application/json"
    digest = key[len("tokens/"):-len(".json")]
    assert json.loads(redis_conn.get(f"expaudit:token:{digest}"))["revoked"] is True
    assert 0 < redis_conn.ttl(f"expaudit:token:{digest}") <= defaults.TOKEN_CACHE_TTL_S
    assert store.list_keys(EVICTIONS_PREFIX) == []  # Redis answered: no marker left behind


def test_revoking_twice_or_an_unknown_token_names_the_token_id(store, redis_conn):
    registry = TokenRegistry(store, redis_conn, admin_token=None)
    _, info = registry.create("lab", "lab")
    registry.revoke(info.token_id)
    with pytest.raises(Conflict) as again:
        registry.revoke(info.token_id)
    assert again.value.field == "token_id"
    assert again.value.message == (f"token '{info.token_id}' is already revoked (its cache entry is "
                                   "overwritten again)")
    with pytest.raises(NotFound) as missing:
        registry.revoke("tok-0000")
    assert missing.value.field == "token_id" and missing.value.message == "no token with id 'tok-0000'"


def test_without_redis_a_revocation_leaves_no_marker(store):
    registry = TokenRegistry(store, None, admin_token=None)
    _, info = registry.create("lab", "lab")
    registry.revoke(info.token_id)
    assert store.list_keys(EVICTIONS_PREFIX) == []


def test_a_revocation_while_redis_is_down_is_logged_and_marked_and_tokens_still_verify(
        store, redis_down, caplog):
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    registry = TokenRegistry(store, redis_down, admin_token=None)
    _, revoked_info = registry.create("gone", "gone")
    kept, kept_info = registry.create("kept", "kept")
    registry.revoke(revoked_info.token_id)
    assert len(store.list_keys(EVICTIONS_PREFIX)) == 1
    assert _warnings(caplog) == ["token cache unavailable (ConnectionError); revocation completed later"]
    caplog.clear()
    assert registry.authenticate(kept) == kept_info  # from the store, Redis still down
    assert _warnings(caplog) == ["token cache unavailable (ConnectionError); revocation completed later",
                                 "token cache unavailable (ConnectionError); reading the store",
                                 "token cache not updated (ConnectionError)"]


def test_a_new_token_is_a_plain_token_with_its_creation_time(store):
    token, info = TokenRegistry(store, None, admin_token=None).create("lab", "lab")
    assert info.admin is False and info.name == "lab" and info.revoked is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", info.created_at)
    assert json.loads(store.get_bytes(store.list_keys("tokens/")[0])) == info.to_dict()
    assert token.startswith("ea_") and len(token) >= 3 + 43  # 32 random bytes at least


def test_the_admin_token_is_the_admin_and_anything_else_is_refused_by_name(store):
    registry = TokenRegistry(store, None, admin_token="adm-secret")
    assert registry.authenticate("adm-secret") == TokenInfo(token_id="admin", name="admin", admin=True,
                                                              created_at="", owner="admin")
    with pytest.raises(Unauthorized) as refused:
        registry.authenticate("adm-secret2")
    assert refused.value.message == "unknown or revoked token" and refused.value.field == "Authorization"


def test_a_token_in_the_cache_is_verified_without_reading_the_store(recording, redis_conn):
    token, info = TokenRegistry(recording, redis_conn, admin_token=None).create("lab", "lab")
    assert TokenRegistry(recording, redis_conn, admin_token=None).authenticate(token) == info
    assert recording.reads == 1  # the first verification reads the record and caches it
    digest = hash_token(token)
    assert 0 < redis_conn.ttl(f"expaudit:token:{digest}") <= defaults.TOKEN_CACHE_TTL_S
    assert TokenRegistry(recording, redis_conn, admin_token=None).authenticate(token) == info
    assert recording.reads == 1


def test_a_store_read_never_overwrites_a_tombstone_written_meanwhile(tmp_path, redis_conn):
    class RacingStore(LocalStore):
        """A revocation's tombstone lands in the cache right after the record was read."""

        def get_bytes(self, key):
            data = super().get_bytes(key)
            if key.startswith("tokens/"):
                revoked = {**json.loads(data), "revoked": True}
                redis_conn.set(f"expaudit:token:{key[len('tokens/'):-len('.json')]}", json.dumps(revoked))
            return data

    store = RacingStore(tmp_path / "racing")
    token, _ = TokenRegistry(store, redis_conn, admin_token=None).create("lab", "lab")
    TokenRegistry(store, redis_conn, admin_token=None).authenticate(token)  # read before the revocation
    assert json.loads(redis_conn.get(f"expaudit:token:{hash_token(token)}"))["revoked"] is True


def test_a_verified_token_is_remembered_for_exactly_the_local_time(store, redis_conn, clock):
    web_a = TokenRegistry(store, redis_conn, admin_token=None, local_ttl_s=5.0)
    web_b = TokenRegistry(store, redis_conn, admin_token=None, local_ttl_s=5.0)
    token, info = web_a.create("lab", "lab")
    web_b.authenticate(token)
    web_a.revoke(info.token_id)
    clock.advance(5.0)
    with pytest.raises(Unauthorized):
        web_b.authenticate(token)


def test_while_redis_is_down_a_token_read_from_the_store_is_still_remembered(recording, redis_down):
    registry = TokenRegistry(recording, redis_down, admin_token=None)
    token, info = registry.create("lab", "lab")
    assert registry.authenticate(token) == info
    assert registry.authenticate(token) == info
    assert recording.reads == 1


def test_the_tokens_remembered_in_memory_are_bounded(store, redis_conn):
    registry = TokenRegistry(store, redis_conn, admin_token=None)
    first, _ = registry.create("a", "a")
    second, _ = registry.create("b", "b")
    registry._local = {f"other-{i}": None for i in range(10_000)}
    registry.authenticate(first)
    assert len(registry._local) == 10_001  # at the bound: kept
    registry.authenticate(second)
    assert list(registry._local) == [hash_token(second)]  # past it: forgotten


def test_missed_revocations_are_looked_for_every_few_seconds_not_on_every_request(
        recording, redis_conn, clock):
    registry = TokenRegistry(recording, redis_conn, admin_token=None)
    tokens = [registry.create(name, name)[0] for name in "abc"]
    registry.authenticate(tokens[0])  # the first request looks
    registry.authenticate(tokens[1])
    assert recording.listings.count(EVICTIONS_PREFIX) == 1
    clock.advance(defaults.TOKEN_EVICTION_CHECK_S)  # exactly the period: looks again
    registry.authenticate(tokens[2])
    assert recording.listings.count(EVICTIONS_PREFIX) == 2


def test_a_missed_revocation_is_retried_on_every_request_until_redis_takes_it(
        recording, redis_conn, monkeypatch):
    registry = TokenRegistry(recording, redis_conn, admin_token=None)
    _, gone = registry.create("gone", "gone")
    kept = [registry.create(name, name)[0] for name in "ab"]
    for token in kept:  # cached while Redis takes writes
        TokenRegistry(recording, redis_conn, admin_token=None).authenticate(token)
    monkeypatch.setattr(redis_conn, "set", _failing)  # Redis answers reads, refuses writes
    registry.revoke(gone.token_id)
    markers = recording.list_keys(EVICTIONS_PREFIX)
    assert len(markers) == 1
    recording.listings.clear()
    registry.authenticate(kept[0])
    registry.authenticate(kept[1])
    assert recording.listings.count(EVICTIONS_PREFIX) == 2  # still pending: looked for again
    monkeypatch.undo()
    registry.authenticate(kept[0])  # remembered: no look
    TokenRegistry(recording, redis_conn, admin_token=None).authenticate(kept[1])
    assert recording.list_keys(EVICTIONS_PREFIX) == []  # written by the next process to look
    assert json.loads(redis_conn.get(markers[0].replace(EVICTIONS_PREFIX, "expaudit:token:")))["revoked"]


def test_a_marker_of_a_deleted_record_is_dropped_and_the_others_still_written(store, redis_conn):
    registry = TokenRegistry(store, redis_conn, admin_token=None)
    kept, _ = registry.create("kept", "kept")
    token, _ = registry.create("gone", "gone")
    digest = hash_token(token)
    store.put_bytes(f"{EVICTIONS_PREFIX}{'0' * 64}", b"")  # its record deleted since; listed first
    store.put_bytes(f"{EVICTIONS_PREFIX}{digest}", b"")  # a revocation Redis missed
    TokenRegistry(store, redis_conn, admin_token=None).authenticate(kept)
    assert store.list_keys(EVICTIONS_PREFIX) == []
    assert json.loads(redis_conn.get(f"expaudit:token:{digest}"))["name"] == "gone"


def test_a_token_remembered_during_an_outage_is_forgotten_once_its_revocation_is_seen(
        store, redis_conn, redis_down, clock, monkeypatch):
    web_a = TokenRegistry(store, redis_down, admin_token=None)  # Redis down for the revoking process
    web_b = TokenRegistry(store, redis_conn, admin_token=None)
    token, info = web_a.create("lab", "lab")
    other, _ = web_a.create("other", "other")
    monkeypatch.setattr(redis_conn, "get", _failing)
    assert web_b.authenticate(token) == info  # read from the store during the outage, remembered
    monkeypatch.undo()
    web_a.revoke(info.token_id)  # only a marker: Redis is down for web_a
    clock.advance(1.0)
    web_b.authenticate(other)  # Redis answers web_b again: it looks for missed revocations first
    with pytest.raises(Unauthorized):
        web_b.authenticate(token)


# ------------------------------------------------------------------ rate limit


def test_requests_are_sent_to_redis_in_batches_by_count_and_by_time(redis_conn, clock):
    limiter = RateLimiter(redis_conn, per_minute=100, flush_every=3, flush_interval_s=2.0)
    key = f"expaudit:rate:t:{int(clock.now // 60)}"
    limiter.hit("t")  # a token's first request in a window is always sent
    assert int(redis_conn.get(key)) == 1
    assert redis_conn.pttl(key) > 59_000  # 61 s: the counter outlives its 60 s window
    limiter.hit("t")
    limiter.hit("t")
    assert int(redis_conn.get(key)) == 1  # two pending here
    limiter.hit("t")  # the third pending one fills the batch
    assert int(redis_conn.get(key)) == 4
    clock.advance(1.0)
    limiter.hit("t")
    assert int(redis_conn.get(key)) == 4
    clock.advance(1.0)  # 2 s since the last flush, exactly the interval
    limiter.hit("t")
    assert int(redis_conn.get(key)) == 6


def test_while_redis_is_down_unsent_requests_are_not_held_against_the_token(redis_down, clock, caplog):
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    limiter = RateLimiter(redis_down, per_minute=1, flush_every=10, flush_interval_s=30.0)
    for _ in range(4):
        limiter.hit("t")  # the first one tries Redis; the others wait for the next batch
    assert _warnings(caplog) == ["rate limiter unavailable (ConnectionError); requests allowed"]


def test_a_rate_limit_refusal_names_the_header_and_when_to_retry(redis_conn, clock):
    clock.now = 60 * 20_000 + 15.5  # 15.5 s into a window: 45 s left
    limiter = RateLimiter(redis_conn, per_minute=1, flush_every=1)
    limiter.hit("t")
    with pytest.raises(TooManyRequests) as refused:
        limiter.hit("t")
    assert refused.value.field == "Authorization" and refused.value.extra == {"retry_after": 45}
    assert refused.value.message == "rate limit of 1 requests per 60 s exceeded; retry in 45 s"


def test_the_windows_kept_in_memory_are_bounded(redis_conn, clock):
    limiter = RateLimiter(redis_conn, per_minute=100)
    limiter._windows = {f"other-{i}": None for i in range(10_000)}
    limiter.hit("t")
    assert len(limiter._windows) == 10_001  # at the bound: kept
    limiter.hit("u")
    assert list(limiter._windows) == ["u"]  # past it: forgotten, this token's window started anew


# ------------------------------------------------------------------ invalid tokens


def test_failed_verifications_block_only_past_the_limit_with_the_window_to_wait(redis_conn):
    limiter = FailedAuthLimiter(redis_conn, per_minute=2)
    limiter.failed("10.0.0.1")
    limiter.failed("10.0.0.1")  # the limit itself is still allowed
    assert 0 < redis_conn.ttl("expaudit:authfail:10.0.0.1") <= 60
    limiter.check("10.0.0.1")
    with pytest.raises(TooManyRequests) as refused:
        limiter.failed("10.0.0.1")
    assert refused.value.field == "Authorization" and refused.value.extra == {"retry_after": 60}
    assert refused.value.message == "more than 2 invalid tokens from this address in 60 s; retry in 60 s"
    with pytest.raises(TooManyRequests) as blocked:
        limiter.check("10.0.0.1")
    assert blocked.value.field == "Authorization" and 0 < blocked.value.extra["retry_after"] <= 60
    limiter.check("10.0.0.2")


def test_a_failure_is_counted_and_its_window_started_in_one_transaction(redis_conn, monkeypatch):
    opened = _transactions(monkeypatch, redis_conn)
    FailedAuthLimiter(redis_conn, per_minute=5).failed("10.0.0.1")
    assert opened == [True]


def test_failed_verifications_are_not_counted_while_redis_is_down(redis_down, caplog):
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    limiter = FailedAuthLimiter(redis_down, per_minute=1)
    for _ in range(3):
        limiter.failed("10.0.0.1")
    assert _warnings(caplog) == ["invalid-token counter unavailable (ConnectionError)"] * 3


def test_the_limit_is_per_window_and_a_block_is_read_from_its_lifetime(redis_conn, redis_down, caplog,
                                                                        monkeypatch):
    limiter = FailedAuthLimiter(redis_conn, per_minute=4, window_s=30)  # 2 per 30 s window
    limiter.failed("10.0.0.1")
    limiter.failed("10.0.0.1")
    with pytest.raises(TooManyRequests, match=r"^more than 2 invalid tokens from this address in 30 s; "
                                              r"retry in 30 s$"):
        limiter.failed("10.0.0.1")
    with monkeypatch.context() as ending, pytest.raises(TooManyRequests) as last_second:
        ending.setattr(redis_conn, "ttl", lambda key: 1)  # a block with one second left
        limiter.check("10.0.0.3")
    assert last_second.value.extra == {"retry_after": 1}
    redis_conn.set("expaudit:authblock:10.0.0.4", 1)  # no lifetime: not a block this code sets
    limiter.check("10.0.0.4")
    with monkeypatch.context() as ending:  # under half a second left: Redis answers a TTL of 0
        ending.setattr(redis_conn, "ttl", lambda key: 0)
        limiter.check("10.0.0.5")
    FailedAuthLimiter(None, per_minute=1).check("10.0.0.1")
    FailedAuthLimiter(None, per_minute=1).failed("10.0.0.1")
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    FailedAuthLimiter(redis_down, per_minute=1).check("10.0.0.1")
    assert _warnings(caplog) == ["invalid-token block unavailable (ConnectionError)"]


@pytest.mark.parametrize("peer,forwarded,proxies,expected", [
    ("10.0.0.9", "1.2.3.4", 0, "10.0.0.9"),  # proxies not trusted: the header is ignored
    (None, "1.2.3.4", 0, "unknown"),
    (None, None, 1, "unknown"),
    ("10.0.0.9", "", 1, "10.0.0.9"),
    ("10.0.0.9", "1.2.3.4", 1, "1.2.3.4"),
    ("10.0.0.9", "1.2.3.4 , 5.6.7.8", 1, "5.6.7.8"),  # the address the one proxy saw
    ("10.0.0.9", " 1.2.3.4 ,5.6.7.8", 2, "1.2.3.4"),  # the outermost of two proxies
    ("10.0.0.9", "1.2.3.4", 2, "10.0.0.9"),  # fewer entries than proxies
    ("10.0.0.9", "1.2.3.4,5.6.7.8,9.9.9.9", 2, "5.6.7.8"),
    ("10.0.0.9", "not-an-ip", 1, "10.0.0.9"),
    ("10.0.0.9", "0:0::1", 1, "::1"),  # one spelling per address
    ("10.0.0.9", "1.2.3.4", -1, "10.0.0.9"),
])
def test_the_client_address(peer, forwarded, proxies, expected):
    assert client_address(peer, forwarded, proxies) == expected


def test_proxies_are_not_trusted_by_default():
    assert client_address("10.0.0.9", "1.2.3.4") == "10.0.0.9"


# ------------------------------------------------------------------ concurrency cap


def test_a_reservation_holds_a_slot_until_committed_released_or_lapsed(redis_conn, clock):
    active = ActiveSubmissions(redis_conn)
    first = active.reserve("o", limit=1)
    with pytest.raises(TooManyRequests) as capped:
        active.reserve("o", limit=1)
    assert capped.value.field == "file" and capped.value.code == "too_many_active"
    assert capped.value.message == ("at most 1 submissions may be queued or running per token; "
                                    "wait for one to finish")
    active.release("o", first)
    second = active.reserve("o", limit=1)
    assert second is not None and second != first
    clock.advance(defaults.ACTIVE_RESERVATION_TTL_S + 1)  # its request died: the slot lapses
    assert active.reserve("o", limit=1) is not None


def test_a_committed_reservation_counts_once_as_its_submission(redis_conn, clock):
    active = ActiveSubmissions(redis_conn)
    reservation = active.reserve("o", limit=2)
    active.commit("o", reservation, "sub-1")
    assert redis_conn.smembers("expaudit:active:o") == {b"sub-1"}
    assert redis_conn.zcard("expaudit:active-pending:o") == 0
    active.reserve("o", limit=2)  # one submission + this reservation = 2
    with pytest.raises(TooManyRequests):
        active.reserve("o", limit=2)


def test_submissions_added_and_removed_take_and_free_slots(redis_conn, clock):
    active = ActiveSubmissions(redis_conn)
    active.add("o", "sub-1")
    assert redis_conn.smembers("expaudit:active:o") == {b"sub-1"}
    with pytest.raises(TooManyRequests):
        active.reserve("o", limit=1)
    active.remove("o", "sub-1")
    assert active.reserve("o", limit=1) is not None


def test_without_redis_the_cap_does_nothing(redis_down, caplog):
    off = ActiveSubmissions(None)
    assert off.reserve("o", limit=0) is None
    off.commit("o", "r", "sub-1")
    off.release("o", "r")
    off.add("o", "sub-1")
    off.remove("o", "sub-1")
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    assert ActiveSubmissions(redis_down).reserve("o", limit=1) is None
    ActiveSubmissions(redis_down).release("o", "r")
    assert _warnings(caplog) == ["concurrency cap unavailable (ConnectionError); submission allowed",
                                 "reservation not given back (ConnectionError); it lapses on its own"]


def test_a_reservation_becomes_its_submission_in_one_transaction(redis_conn, monkeypatch):
    active = ActiveSubmissions(redis_conn)
    reservation = active.reserve("o", limit=1)
    opened = _transactions(monkeypatch, redis_conn)
    active.commit("o", reservation, "sub-1")
    assert opened == [True]
