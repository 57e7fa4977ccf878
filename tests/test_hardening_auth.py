"""Token faults over real HTTP: revocation across a Redis outage, and guessing tokens."""

from __future__ import annotations

import json
import time

import pytest
import redis
import requests

from service.auth import hash_token
from service.defaults import FAILED_AUTH_PER_MINUTE, TOKEN_LOCAL_CACHE_S
from tests.servers import (ADMIN_TOKEN, RedisServer, ServiceStack, synthetic_setting,
                           write_catalog)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture()
def persistent_stack(tmp_path):
    """gunicorn (two web processes) on a Redis that keeps its data across a restart (AOF)."""
    redis_server = RedisServer(tmp_path / "redis", appendonly=True).start()
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("auth-k3", k=3, n_states=2))
    stack = ServiceStack(tmp_path, redis_server, catalog)
    stack.start_web(workers=2)
    servers = [redis_server]
    yield stack, servers
    stack.stop()
    for server in servers:
        server.stop()


def _mine(stack, token: str) -> int:
    return requests.get(f"{stack.url}/api/v1/submissions", timeout=60,
                        headers={"Authorization": f"Bearer {token}"}).status_code


def test_a_token_revoked_during_a_redis_outage_stays_revoked_when_redis_returns(persistent_stack):
    stack, servers = persistent_stack
    redis_server = servers[0]
    created = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "leaked"}, headers=ADMIN,
                            timeout=60).json()
    token, token_id = created["token"], created["token_id"]
    assert [_mine(stack, token) for _ in range(4)] == [200] * 4  # cached in Redis (and both processes)
    cache_key = f"expaudit:token:{hash_token(token)}"
    assert json.loads(redis.Redis.from_url(redis_server.url).get(cache_key))["revoked"] is False

    redis_server.stop()  # the outage; the AOF keeps the cache entry
    revoked = requests.delete(f"{stack.url}/api/v1/tokens/{token_id}", headers=ADMIN, timeout=30)
    assert revoked.status_code == 200, revoked.text  # the store, the system of record, took it
    assert revoked.json()["revoked"] is True
    servers.append(RedisServer(redis_server.directory, port=redis_server.port, appendonly=True).start())
    restarted = redis.Redis.from_url(redis_server.url)
    assert restarted.get(cache_key) is not None  # the stale entry came back with Redis
    time.sleep(TOKEN_LOCAL_CACHE_S + 0.5)  # past the documented per-process memory
    assert [_mine(stack, token) for _ in range(6)] == [401] * 6
    assert json.loads(restarted.get(cache_key))["revoked"] is True

    again = requests.delete(f"{stack.url}/api/v1/tokens/{token_id}", headers=ADMIN, timeout=60)
    assert again.status_code == 409 and "already revoked" in again.json()["error"]["message"]
    restarted.set(cache_key, json.dumps({**json.loads(restarted.get(cache_key)), "revoked": False}))
    again = requests.delete(f"{stack.url}/api/v1/tokens/{token_id}", headers=ADMIN, timeout=60)
    assert again.status_code == 409
    assert json.loads(restarted.get(cache_key))["revoked"] is True  # a retry finishes the job
    assert token not in stack.web.log_tail(100_000) and hash_token(token) not in stack.web.log_tail(100_000)


@pytest.fixture()
def one_process_stack(tmp_path):
    redis_server = RedisServer(tmp_path / "redis").start()
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("auth-k3", k=3, n_states=2))
    stack = ServiceStack(tmp_path, redis_server, catalog)
    stack.start_web(workers=1)
    yield stack
    stack.stop()
    redis_server.stop()


def test_guessing_tokens_from_one_address_is_refused_with_retry_after(one_process_stack):
    stack = one_process_stack
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "real"}, headers=ADMIN,
                          timeout=60).json()["token"]
    statuses = [_mine(stack, f"ea_guess{i:04d}") for i in range(FAILED_AUTH_PER_MINUTE)]
    assert statuses == [401] * FAILED_AUTH_PER_MINUTE
    refused = requests.get(f"{stack.url}/api/v1/submissions", timeout=60,
                           headers={"Authorization": "Bearer ea_one-more-guess"})
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and error["field"] == "Authorization"
    assert 1 <= int(refused.headers["Retry-After"]) <= 61
    assert _mine(stack, token) == 429  # a right guess from a blocked address is refused too
    anonymous = requests.get(f"{stack.url}/api/v1/settings", timeout=60)
    assert anonymous.status_code == 200  # reads without a token are not affected


def test_behind_a_proxy_the_address_the_proxy_saw_is_counted(one_process_stack):
    """The test client is on 127.0.0.1, like the compose file's nginx: its X-Forwarded-For
    (last entry: the address the proxy saw) names the client, so one client's guesses do not
    lock out the others behind the same proxy."""
    stack = one_process_stack
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "real"}, headers=ADMIN,
                          timeout=60).json()["token"]

    def mine(bearer: str, client: str) -> int:
        return requests.get(f"{stack.url}/api/v1/submissions", timeout=60, headers={
            "Authorization": f"Bearer {bearer}",
            "X-Forwarded-For": f"192.0.2.99, {client}"}).status_code

    assert [mine(f"ea_guess{i}", "203.0.113.7") for i in range(FAILED_AUTH_PER_MINUTE)] == \
        [401] * FAILED_AUTH_PER_MINUTE
    assert mine("ea_one-more", "203.0.113.7") == 429
    assert mine(token, "198.51.100.2") == 200  # another client of the same proxy
    assert mine(token, "203.0.113.7") == 429
