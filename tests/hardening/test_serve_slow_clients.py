"""Issue 30, item 2: slow clients must not take the web server of `expaudit serve` down.

`expaudit serve` puts gunicorn straight on its port, with no proxy in front. With sync
workers, two connections dripping a header line every few seconds held both web processes
and `/healthz` timed out for as long as they dripped; a valid token dripping an upload body
did the same. The attack here runs against the very command `serve` runs
(`service.serve.embedded.web_command`, two web processes) on a free port: several anonymous
connections drip header lines and two authenticated ones drip an upload body, all at once;
while they are connected `/healthz` must answer, and the header drippers must be cut off.

The deadlines are generous (a check that the service answers at all, not a timing):
`/healthz` is given 30 s per call, while the drippers go on for far longer.
"""

from __future__ import annotations

import select
import socket
import threading
import time

import pytest
import requests

from service.process import defaults
from service.serve.embedded import web_command
from tests.support.paths import REPO_ROOT
from tests.support.servers import (ADMIN_TOKEN, ProcessServer, RedisServer, free_port, new_token,
                                   service_env, synthetic_setting, wait_for_port, write_catalog)

HEADER_DRIPPERS = 4
BODY_DRIPPERS = 2
DRIP_EVERY_S = 1.0
DRIP_FOR_S = 120.0
"""Upper bound of one dripper's life: the test stops them long before."""


class Dripper(threading.Thread):
    """One connection that sends `head`, then one `drip` every `DRIP_EVERY_S` until told to
    stop (or `DRIP_FOR_S` passed); `closed` is set once the server hung up on it."""

    def __init__(self, port: int, head: bytes, drip: bytes) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(head)
        self.drip = drip
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.drips = 0

    def _server_hung_up(self) -> bool:
        readable, _, _ = select.select([self.sock], [], [], 0)
        if not readable:
            return False
        try:
            return self.sock.recv(65536) == b""
        except OSError:
            return True

    def run(self) -> None:
        deadline = time.monotonic() + DRIP_FOR_S
        try:
            while not self.stop.wait(DRIP_EVERY_S) and time.monotonic() < deadline:
                if self._server_hung_up():
                    self.closed.set()
                    return
                try:
                    self.sock.sendall(self.drip)
                    self.drips += 1
                except OSError:
                    self.closed.set()
                    return
        finally:
            self.sock.close()


def header_dripper(port: int, n: int) -> Dripper:
    """A request whose header lines come one at a time, never ending (no token needed)."""
    return Dripper(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", f"X-Drip-{n}: a\r\n".encode())


def body_dripper(port: int, token: str, setting: str) -> Dripper:
    """An upload with a valid token whose body comes a byte at a time (announced 1 MB)."""
    boundary = "dripdripdrip"
    opening = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"setting\"\r\n\r\n"
               f"{setting}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
               f"filename=\"s.csv\"\r\nContent-Type: text/csv\r\n\r\nscene_id,experience_id,score\r\n")
    head = (f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: 1000000\r\n\r\n{opening}").encode()
    return Dripper(port, head, b"a")


@pytest.fixture(scope="module")
def serve_web(tmp_path_factory):
    """The web server exactly as `expaudit serve` starts it (two processes) on a free port."""
    directory = tmp_path_factory.mktemp("slow")
    redis_server = RedisServer(directory / "redis").start()
    summary, data = synthetic_setting("slow-k3", k=3, n_states=4, draws=2, seeds=2)
    catalog = write_catalog(directory / "catalog", (summary, data))
    port = free_port()
    env = service_env(EXPAUDIT_REDIS_URL=redis_server.url, EXPAUDIT_ADMIN_TOKEN=ADMIN_TOKEN,
                      EXPAUDIT_CATALOG=str(catalog), EXPAUDIT_STORE=str(directory / "store"),
                      EXPAUDIT_N_SHUFFLES="200", EXPAUDIT_N_BOOTSTRAP="200")
    web = ProcessServer(web_command("127.0.0.1", port, 2), directory / "web.log", env=env,
                        cwd=REPO_ROOT).start()
    try:
        wait_for_port(port, 60, web.proc, web.log)
        url = f"http://127.0.0.1:{port}"
        assert requests.get(f"{url}/healthz", timeout=60).status_code == 200, web.log_tail()
        yield url, port, summary.id, web
    finally:
        web.stop()
        redis_server.stop()


def test_healthz_answers_while_slow_clients_drip_headers_and_upload_bodies(serve_web):
    url, port, setting, web = serve_web
    token = new_token(url, "slow-dripper")
    drippers = [header_dripper(port, n) for n in range(HEADER_DRIPPERS)]
    drippers += [body_dripper(port, token, setting) for _ in range(BODY_DRIPPERS)]
    for dripper in drippers:
        dripper.start()
    try:
        time.sleep(3 * DRIP_EVERY_S)  # every dripper has been taken in by a web process
        for _ in range(6):
            health = requests.get(f"{url}/healthz", timeout=30)  # a sync server never answers
            assert health.status_code == 200, health.text
            assert requests.get(f"{url}/api/v1/settings", timeout=30).status_code == 200
        still = [d for d in drippers[HEADER_DRIPPERS:] if not d.closed.is_set()]
        assert len(still) == BODY_DRIPPERS, "the body drippers were answered, not waited for"
    finally:
        for dripper in drippers:
            dripper.stop.set()
        for dripper in drippers:
            dripper.join(10)
    assert web.alive, web.log_tail()


def test_a_client_that_never_finishes_its_headers_is_cut_off(serve_web):
    """Header drippers do not pile up: each is disconnected once its headers took longer than
    `WEB_HEADER_TIMEOUT_S` (checked with a deadline several times that)."""
    url, port, _setting, _web = serve_web
    drippers = [header_dripper(port, n) for n in range(HEADER_DRIPPERS)]
    for dripper in drippers:
        dripper.start()
    try:
        deadline = 4 * defaults.WEB_HEADER_TIMEOUT_S + 30
        for dripper in drippers:
            assert dripper.closed.wait(deadline), "a header dripper stayed connected"
        assert requests.get(f"{url}/healthz", timeout=30).status_code == 200
    finally:
        for dripper in drippers:
            dripper.stop.set()
        for dripper in drippers:
            dripper.join(10)


def test_serve_runs_gevent_workers_with_a_header_deadline():
    command = web_command("127.0.0.1", 8000, 2)
    assert command[command.index("--worker-class") + 1] == defaults.WEB_WORKER_CLASS == "gevent"
    assert command[command.index("--keep-alive") + 1] == str(defaults.WEB_HEADER_TIMEOUT_S)
