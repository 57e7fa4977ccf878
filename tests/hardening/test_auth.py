"""Token faults over real HTTP: revocation across a Redis outage, and guessing tokens."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
import redis
import requests

from service.auth.tokens import hash_token
from service.process.defaults import FAILED_AUTH_PER_MINUTE, TOKEN_LOCAL_CACHE_S
from tests.support.manual_clock import ManualClock
from tests.support.servers import (ADMIN_TOKEN, RedisServer, ServiceStack, _descendants,
                                   synthetic_setting, write_catalog)

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
    created = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "leaked", "owner": "leaked"}, headers=ADMIN,
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


def _stack(tmp_path, workers: int, **env: str):
    redis_server = RedisServer(tmp_path / "redis").start()
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("auth-k3", k=3, n_states=2))
    stack = ServiceStack(tmp_path, redis_server, catalog, extra_env=env)
    stack.start_web(workers=workers)
    return stack, redis_server


@pytest.fixture()
def two_process_stack(tmp_path):
    stack, redis_server = _stack(tmp_path, workers=2)
    yield stack
    stack.stop()
    redis_server.stop()


@pytest.fixture()
def proxied_stack(tmp_path):
    """One web process behind one trusted proxy (EXPAUDIT_TRUSTED_PROXIES=1, as compose sets
    for its nginx); the test client stands in for the proxy."""
    stack, redis_server = _stack(tmp_path, workers=1, EXPAUDIT_TRUSTED_PROXIES="1")
    yield stack
    stack.stop()
    redis_server.stop()


def _accepting_worker(stack, conn: socket.socket) -> int:
    """The web process that accepted `conn`: the one holding the server end of the connection
    (polled from /proc until a worker has accepted it)."""
    client_port = conn.getsockname()[1]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if (int(fields[1].rsplit(":", 1)[1], 16) == stack.port
                        and int(fields[2].rsplit(":", 1)[1], 16) == client_port):
                    inodes.add(f"socket:[{fields[9]}]")
        for pid in _descendants(stack.web.proc.pid):
            try:
                targets = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
            except OSError:
                continue
            if targets & inodes:
                return pid
        time.sleep(0.02)
    raise AssertionError("no web process accepted the held connection")


def test_a_block_set_by_one_web_process_refuses_even_a_right_token_in_the_other(two_process_stack):
    """One web process is held on a half-sent request while the other serves the guesses;
    the held request then completes with the right token, in the process that saw none."""
    stack = two_process_stack
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "real", "owner": "real"}, headers=ADMIN,
                          timeout=60).json()["token"]
    held = socket.create_connection(("127.0.0.1", stack.port), timeout=60)
    held.sendall(b"GET /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    holder = _accepting_worker(stack, held)
    assert holder in _descendants(stack.web.proc.pid) and len(_descendants(stack.web.proc.pid)) == 2

    statuses = [_mine(stack, f"ea_guess{i:04d}") for i in range(FAILED_AUTH_PER_MINUTE)]
    assert statuses == [401] * FAILED_AUTH_PER_MINUTE  # all served by the other process
    refused = requests.get(f"{stack.url}/api/v1/submissions", timeout=60,
                           headers={"Authorization": "Bearer ea_one-more-guess"})
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and error["field"] == "Authorization"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60

    held.sendall(f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    answer = b""
    while chunk := held.recv(65536):
        answer += chunk
    held.close()
    assert answer.split(b"\r\n", 1)[0] == b"HTTP/1.1 429 TOO MANY REQUESTS", answer[:300]
    assert _mine(stack, token) == 429  # a right guess from a blocked address, in any process
    anonymous = requests.get(f"{stack.url}/api/v1/settings", timeout=60)
    assert anonymous.status_code == 200  # reads without a token are not affected


def test_a_forwarded_for_header_is_ignored_unless_proxies_are_trusted(two_process_stack):
    """By default (no trusted proxy) a client that writes a new X-Forwarded-For per guess is
    still counted as its own address: the header is a client's to write."""
    stack = two_process_stack

    def guess(i: int) -> int:
        return requests.get(f"{stack.url}/api/v1/submissions", timeout=60, headers={
            "Authorization": f"Bearer ea_guess{i}", "X-Forwarded-For": f"203.0.113.{i % 250}"}
        ).status_code

    assert [guess(i) for i in range(FAILED_AUTH_PER_MINUTE)] == [401] * FAILED_AUTH_PER_MINUTE
    assert guess(FAILED_AUTH_PER_MINUTE) == 429


def test_behind_a_trusted_proxy_the_address_the_proxy_saw_is_counted(proxied_stack):
    """With one trusted proxy, the last X-Forwarded-For entry (the address the proxy saw,
    appended by it) names the client, so one client's guesses do not lock out the others
    behind the same proxy; what the client wrote before it is not trusted."""
    stack = proxied_stack
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "real", "owner": "real"}, headers=ADMIN,
                          timeout=60).json()["token"]

    def mine(bearer: str, client: str, spoofed: str = "192.0.2.99") -> int:
        return requests.get(f"{stack.url}/api/v1/submissions", timeout=60, headers={
            "Authorization": f"Bearer {bearer}",
            "X-Forwarded-For": f"{spoofed}, {client}"}).status_code

    assert [mine(f"ea_guess{i}", "203.0.113.7", spoofed=f"192.0.2.{i}")
            for i in range(FAILED_AUTH_PER_MINUTE)] == [401] * FAILED_AUTH_PER_MINUTE
    assert mine("ea_one-more", "203.0.113.7") == 429
    assert mine(token, "198.51.100.2") == 200  # another client of the same proxy
    assert mine(token, "203.0.113.7") == 429


def test_blocks_survive_many_other_blocked_addresses(redis_conn):
    """Rotating addresses cannot flush a block: blocks live in Redis, none in process memory,
    and another process (a second limiter) sees them."""
    from service.auth.tokens import FailedAuthLimiter
    from service.errors import TooManyRequests

    first = FailedAuthLimiter(redis_conn, per_minute=1)
    with pytest.raises(TooManyRequests):
        for _ in range(2):
            first.failed("198.51.100.1")
    for i in range(10_001):
        client = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
        first.failed(client)
        with pytest.raises(TooManyRequests):
            first.failed(client)
    for limiter in (first, FailedAuthLimiter(redis_conn, per_minute=1)):
        with pytest.raises(TooManyRequests, match="more than 1 invalid tokens from this address"):
            limiter.check("198.51.100.1")


@pytest.fixture()
def outage(tmp_path, monkeypatch):
    """A store, a Redis that keeps its data across a restart (AOF), and the clock of
    `service.auth.tokens` under the test's control."""
    import service.auth.tokens
    from service.store.storage import LocalStore

    clock = ManualClock()
    monkeypatch.setattr(service.auth.tokens, "time", clock)
    servers = [RedisServer(tmp_path / "redis", appendonly=True).start()]
    conn = redis.Redis(port=servers[0].port, socket_connect_timeout=0.5, socket_timeout=2)
    yield LocalStore(tmp_path / "store"), conn, servers, clock
    conn.close()
    for server in servers:
        server.stop()


def _restart(servers) -> None:
    old = servers[-1]
    servers.append(RedisServer(old.directory, port=old.port, appendonly=True).start())


@pytest.mark.parametrize("touched_redis_in_the_outage", [True, False])
def test_a_revocation_during_an_outage_is_refused_by_every_process_within_the_local_time(
        outage, touched_redis_in_the_outage):
    """web_b looked for missed revocations just before the outage; the token is revoked
    during it (only a marker in the store) and Redis comes back with the old cache entry.
    web_b is to refuse the token within `TOKEN_LOCAL_CACHE_S` of the revocation: at once when
    it met the outage itself, else at its next look, never by remembering the stale entry for
    a full `TOKEN_LOCAL_CACHE_S` after reading it."""
    from service.auth.tokens import TokenRegistry
    from service.errors import Unauthorized

    store, conn, servers, clock = outage
    web_a = TokenRegistry(store, conn, admin_token=None, local_ttl_s=TOKEN_LOCAL_CACHE_S)
    web_b = TokenRegistry(store, conn, admin_token=None, local_ttl_s=TOKEN_LOCAL_CACHE_S)
    token, info = web_a.create("leaked", "leaked")
    other, _ = web_a.create("other", "other")
    assert web_a.authenticate(token) == info  # cached in Redis
    web_b.authenticate(other)  # web_b looks for missed revocations now

    servers[-1].stop()
    clock.advance(0.5)
    if touched_redis_in_the_outage:
        web_b.authenticate(web_a.create("third", "third")[0])  # read from the store: Redis is down
    clock.advance(0.5)
    assert web_a.revoke(info.token_id).revoked  # the store took it; the tombstone did not
    revoked_at = clock.now
    _restart(servers)
    assert json.loads(conn.get(f"expaudit:token:{hash_token(token)}"))["revoked"] is False

    clock.advance(1.0)
    answers = []
    while clock.now <= revoked_at + 2 * TOKEN_LOCAL_CACHE_S:
        try:
            answers.append((round(clock.now - revoked_at, 1), web_b.authenticate(token).revoked))
        except Unauthorized:
            answers.append((round(clock.now - revoked_at, 1), "refused"))
        clock.advance(0.5)
    late = [(at, answer) for at, answer in answers if at > TOKEN_LOCAL_CACHE_S and answer != "refused"]
    assert late == [], answers
    if touched_redis_in_the_outage:
        assert {answer for _at, answer in answers} == {"refused"}, answers
