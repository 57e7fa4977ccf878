"""Tokens (hashed, cached, revocable), admin rights, rate limits, concurrency caps, privacy."""

from __future__ import annotations

import hashlib
import logging

import pytest

from service.auth.tokens import RateLimiter, TokenRegistry, hash_token
from service.errors import TooManyRequests, Unauthorized
from tests.support.manual_clock import ManualClock
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs, scores_csv
from tests.support.submissions import submit_scores


def _client(store, redis_conn, catalog, **config):
    return make_app(store, redis_conn, catalog, **config).test_client()


def _token(client, name="lab") -> str:
    response = client.post("/api/v1/tokens", json={"name": name, "owner": name}, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201, response.json
    return response.json["token"]


def test_tokens_are_stored_hashed_only(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog)
    token = _token(client)
    digest = hash_token(token)
    assert store.list_keys("tokens/") == [f"tokens/{digest}.json"]
    assert client.get("/api/v1/submissions", headers=bearer(token)).status_code == 200
    for key in store.list_keys():
        assert token.encode() not in store.get_bytes(key)
    for key in redis_conn.keys("*"):
        assert token.encode() not in key
        if redis_conn.type(key) == b"string":
            assert token.encode() not in redis_conn.get(key)
    assert redis_conn.exists(f"expaudit:token:{digest}")


def test_registry_verifies_from_the_store_when_the_cache_is_gone(store, redis_conn):
    registry = TokenRegistry(store, redis_conn, admin_token=None)
    token, info = registry.create("lab", "lab")
    redis_conn.flushdb()
    assert registry.authenticate(token) == info
    assert registry.authenticate(token).token_id == f"tok-{hashlib.sha256(token.encode()).hexdigest()[:16]}"
    with pytest.raises(Unauthorized, match="unknown or revoked token"):
        registry.authenticate(token + "x")


@pytest.mark.parametrize("header,message", [
    (None, "needs a bearer token"),
    ("Bearer nope", "unknown or revoked token"),
    ("Basic abc", "must be 'Bearer <token>'"),
    ("Bearer ", "must be 'Bearer <token>'"),
])
def test_bad_credentials_are_401_naming_the_header(store, redis_conn, catalog, header, message):
    client = _client(store, redis_conn, catalog)
    headers = {} if header is None else {"Authorization": header}
    response = client.get("/api/v1/submissions", headers=headers)
    assert response.status_code == 401
    assert response.json["error"]["field"] == "Authorization"
    assert message in response.json["error"]["message"]


def test_only_admin_manages_tokens(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog)
    token = _token(client)
    refused = client.post("/api/v1/tokens", json={"name": "x"}, headers=bearer(token))
    assert refused.status_code == 403 and refused.json["error"]["code"] == "forbidden"
    bad = client.post("/api/v1/tokens", json={"name": ""}, headers=bearer(ADMIN_TOKEN))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "name"
    not_json = client.post("/api/v1/tokens", data="x", headers=bearer(ADMIN_TOKEN))
    assert not_json.status_code == 422 and not_json.json["error"]["field"] == "body"
    nested = client.post("/api/v1/tokens", data="[" * 100_000 + "]" * 100_000,
                         content_type="application/json", headers=bearer(ADMIN_TOKEN))
    assert nested.status_code == 422 and nested.json["error"]["field"] == "body"
    typo = client.post("/api/v1/tokens", json={"name": "lab-x", "admn": True}, headers=bearer(ADMIN_TOKEN))
    assert typo.status_code == 422 and typo.json["error"]["field"] == "admn"  # not a silent non-admin
    newline = client.post("/api/v1/tokens", json={"name": "lab\n"}, headers=bearer(ADMIN_TOKEN))
    assert newline.status_code == 422 and newline.json["error"]["field"] == "name"
    listed = client.get("/api/v1/tokens", headers=bearer(ADMIN_TOKEN)).json["tokens"]
    assert [t["name"] for t in listed] == ["lab"] and "token" not in listed[0]


def test_revoked_token_is_refused_at_once(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog)
    token = _token(client)
    assert client.get("/api/v1/submissions", headers=bearer(token)).status_code == 200
    token_id = client.get("/api/v1/tokens", headers=bearer(ADMIN_TOKEN)).json["tokens"][0]["token_id"]
    revoked = client.delete(f"/api/v1/tokens/{token_id}", headers=bearer(ADMIN_TOKEN))
    assert revoked.status_code == 200 and revoked.json["revoked"] is True
    assert client.get("/api/v1/submissions", headers=bearer(token)).status_code == 401
    again = client.delete(f"/api/v1/tokens/{token_id}", headers=bearer(ADMIN_TOKEN))
    assert again.status_code == 409
    missing = client.delete("/api/v1/tokens/tok-0000", headers=bearer(ADMIN_TOKEN))
    assert missing.status_code == 404 and missing.json["error"]["field"] == "token_id"


def test_rate_limit_per_token(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog, rate_limit_per_minute=3)
    token, other = _token(client, "a"), _token(client, "b")
    codes = [client.get("/api/v1/submissions", headers=bearer(token)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = client.get("/api/v1/submissions", headers=bearer(token))
    assert limited.json["error"]["code"] == "rate_limited"
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert client.get("/api/v1/submissions", headers=bearer(other)).status_code == 200


def test_rate_limiter_unit(redis_conn):
    limiter = RateLimiter(redis_conn, per_minute=2)
    limiter.hit("t")
    limiter.hit("t")
    with pytest.raises(TooManyRequests, match="rate limit of 2 requests per 60 s exceeded"):
        limiter.hit("t")


def test_concurrency_cap_frees_when_jobs_finish(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog, max_active_submissions=1)
    token = _token(client)
    assert submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k4")), "s.csv",
                         setting="toy-k4").status_code == 202
    capped = submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k3")), "s.csv",
                           setting="toy-k3")
    assert capped.status_code == 429 and capped.json["error"]["code"] == "too_many_active"
    run_jobs(store, redis_conn, catalog)
    assert submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k3")), "s.csv",
                         setting="toy-k3").status_code == 202


def test_submissions_are_private_to_their_owner(store, redis_conn, catalog):
    client = _client(store, redis_conn, catalog)
    owner, stranger = _token(client, "owner"), _token(client, "stranger")
    sid = submit_scores(client, owner, scores_csv(catalog.load_transfer("toy-k4")), "s.csv",
                        setting="toy-k4").json["id"]
    run_jobs(store, redis_conn, catalog)
    for path in (f"/api/v1/submissions/{sid}", f"/api/v1/submissions/{sid}/report"):
        assert client.get(path, headers=bearer(owner)).status_code == 200
        assert client.get(path, headers=bearer(stranger)).status_code == 404
        assert client.get(path).status_code == 404
        assert client.get(path, headers=bearer(ADMIN_TOKEN)).status_code == 200
    assert client.post(f"/api/v1/submissions/{sid}/publish", headers=bearer(stranger)).status_code == 404
    assert client.get("/api/v1/submissions", headers=bearer(stranger)).json["submissions"] == []
    assert client.post(f"/api/v1/submissions/{sid}/publish", headers=bearer(owner)).status_code == 200
    assert client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(stranger)).status_code == 200


def test_no_token_in_any_log_line(store, redis_conn, catalog, caplog):
    caplog.set_level(logging.DEBUG)
    client = _client(store, redis_conn, catalog)
    token = _token(client)
    submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k4")), "s.csv",
                  setting="toy-k4")
    client.get("/api/v1/submissions", headers=bearer(token + "wrong"))
    run_jobs(store, redis_conn, catalog)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert caplog.records, "expected the jobs to log something"
    for secret in (token, ADMIN_TOKEN, hash_token(token)):
        assert secret not in text


def test_config_repr_and_redacted_hide_secrets():
    from service.process.config import ServiceConfig

    config = ServiceConfig(admin_token="adm-secret", s3_secret_key="s3-secret")
    assert "adm-secret" not in repr(config) and "s3-secret" not in repr(config)
    assert config.redacted()["admin_token"] == "***"


def test_rate_limit_is_shared_between_processes(redis_conn):
    # Two limiters stand for two web processes sharing one Redis counter.
    first = RateLimiter(redis_conn, per_minute=6, flush_every=2)
    second = RateLimiter(redis_conn, per_minute=6, flush_every=2)
    for _ in range(3):
        first.hit("t")
        second.hit("t")
    with pytest.raises(TooManyRequests, match="rate limit of 6 requests per 60 s exceeded"):
        for _ in range(2 * 2 + 1):  # at most flush_every unflushed requests per process
            first.hit("t")
            second.hit("t")


def test_rate_limit_counter_always_expires_with_its_window(redis_conn):
    import time

    first = RateLimiter(redis_conn, per_minute=100, flush_every=1)
    second = RateLimiter(redis_conn, per_minute=100, flush_every=1)
    first.hit("t")
    second.hit("t")
    index = int(time.time() // 60)
    key = f"expaudit:rate:t:{index}"
    if redis_conn.get(key) is None:  # the minute turned between the hits and the read
        first.hit("t")
        key = f"expaudit:rate:t:{int(time.time() // 60)}"
    assert 0 < redis_conn.ttl(key) <= 61
    redis_conn.delete(key)  # Redis lost the counter mid-window
    second.hit("t")
    assert int(redis_conn.get(key)) == 1 and 0 < redis_conn.ttl(key) <= 61


@pytest.fixture
def clock(monkeypatch) -> ManualClock:
    import service.auth.tokens

    fake = ManualClock()
    monkeypatch.setattr(service.auth.tokens, "time", fake)
    return fake


def test_rate_limiter_lets_requests_through_while_redis_is_down_and_limits_once_back(
        tmp_path, clock, caplog):
    import redis

    from tests.support.servers import RedisServer

    server = RedisServer(tmp_path / "redis")  # its port, not yet listening: Redis is down
    conn = redis.Redis(port=server.port, socket_connect_timeout=0.5)
    limiter = RateLimiter(conn, per_minute=1, flush_every=1)
    caplog.set_level(logging.WARNING, logger="service.auth.tokens")
    try:
        for _ in range(3):
            limiter.hit("t")  # past the limit of 1, and let through: nothing can be counted
        assert [r.getMessage() for r in caplog.records if r.name == "service.auth.tokens"] == [
            "rate limiter unavailable (ConnectionError); requests allowed"] * 3
        server.start()
        limiter.hit("t")  # counted again from the first request Redis answers
        assert int(conn.get(f"expaudit:rate:t:{int(clock.now // 60)}")) == 1
        with pytest.raises(TooManyRequests, match="rate limit of 1 requests per 60 s exceeded"):
            limiter.hit("t")
    finally:
        conn.close()
        server.stop()


def test_revocation_reaches_other_processes_within_the_local_cache_time(store, redis_conn, clock):
    web_a = TokenRegistry(store, redis_conn, admin_token=None, local_ttl_s=5.0)
    web_b = TokenRegistry(store, redis_conn, admin_token=None, local_ttl_s=5.0)
    token, info = web_a.create("lab", "lab")
    assert web_b.authenticate(token) == info  # web_b remembers it for 5 s from now
    web_a.revoke(info.token_id)
    with pytest.raises(Unauthorized, match="unknown or revoked token"):
        web_a.authenticate(token)  # the revoking process refuses at once
    clock.advance(4.9)
    assert web_b.authenticate(token) == info  # still inside web_b's local cache time
    clock.advance(0.2)
    with pytest.raises(Unauthorized, match="unknown or revoked token"):
        web_b.authenticate(token)  # past it: web_b reads the shared cache and refuses
