"""Operational faults over real HTTP: a store that refuses writes, a hostile SCRIPT_NAME
header, and the embedded worker dying under `expaudit serve`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.paths import REPO_ROOT
from tests.support.servers import (ADMIN_TOKEN, RedisServer, _descendants, free_port, scores_csv,
                                   service_env, synthetic_setting, web_stack, write_catalog)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ops")
    redis_server = RedisServer(directory / "redis").start()
    setting = synthetic_setting("ops-k3", k=3, n_states=4, draws=2, seeds=2)
    stack = web_stack(directory, redis_server, setting)
    yield stack, setting
    stack.stop()
    redis_server.stop()


@contextlib.contextmanager
def read_only(directory: Path):
    """Make `directory` refuse writes: a read-only bind mount as root (root ignores modes),
    else its modes without write bits."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], check=True)
            yield
        finally:
            subprocess.run(["umount", str(directory)], check=True)
    else:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")] if p.is_dir()}
        for path in modes:
            path.chmod(0o555)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)


def test_a_store_that_refuses_writes_is_a_503_with_a_reason_and_healthz_says_so(stack):
    stack, (summary, data) = stack
    token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "ops", "owner": "ops"}, headers=ADMIN,
                          timeout=60).json()["token"]
    assert requests.get(f"{stack.url}/healthz", timeout=60).json()["store"] == "ok"
    store_dir = stack.directory / "store"
    with read_only(store_dir):
        response = requests.post(f"{stack.url}/api/v1/submissions", timeout=30,
                                 headers={"Authorization": f"Bearer {token}"},
                                 files={"file": ("s.csv", scores_csv(data))},
                                 data={"setting": summary.id})
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "unavailable" and "not writable" in error["message"]
        assert response.headers["Retry-After"]
        health = requests.get(f"{stack.url}/healthz", timeout=60)
        assert health.status_code == 503
        assert health.json()["store"].startswith("unavailable: not writable")
        for text in (response.text, health.text):
            assert str(store_dir) not in text and str(REPO_ROOT) not in text
    assert requests.get(f"{stack.url}/healthz", timeout=60).status_code == 200
    assert str(store_dir) not in stack.web.log_tail(100_000)


def test_healthz_polled_anonymously_writes_the_store_at_most_once_per_check_time(stack):
    """A probe every request: the write check's success is remembered by the process (its
    probe directory is left alone), reads and the Redis ping still happen each time."""
    from service.process.defaults import HEALTHZ_WRITE_CHECK_S

    stack, _setting = stack
    probes = stack.directory / "store" / "healthz"
    started = time.monotonic()
    assert requests.get(f"{stack.url}/healthz", timeout=60).status_code == 200
    written = probes.stat().st_mtime_ns  # the probe object is created and deleted in here
    statuses = []
    while time.monotonic() - started < HEALTHZ_WRITE_CHECK_S / 2 and len(statuses) < 5:
        statuses.append(requests.get(f"{stack.url}/healthz", timeout=60).status_code)
    assert statuses and set(statuses) == {200}
    if time.monotonic() - started < HEALTHZ_WRITE_CHECK_S:  # still inside the remembered time
        assert probes.stat().st_mtime_ns == written


def test_a_script_name_header_changes_nothing(stack):
    stack, (summary, _data) = stack
    for script_name in ("/evil", "/api"):
        health = requests.get(f"{stack.url}/healthz", headers={"SCRIPT_NAME": script_name}, timeout=60)
        assert health.status_code == 200, health.text
        setting = requests.get(f"{stack.url}/api/v1/settings/{summary.id}",
                               headers={"SCRIPT_NAME": script_name}, timeout=60)
        assert setting.status_code == 200, setting.text
        assert f'"{script_name}/api/v1/' not in setting.text


def test_a_script_name_that_reaches_the_app_does_not_move_its_routes_or_links(stack):
    """Another server (or a gunicorn told to forward the header) can hand the app a script
    name the client chose, taken off the path; the app serves the whole path and writes
    links without it."""
    from service.web.app import create_app
    from service.process.config import from_env

    stack, (summary, _data) = stack
    client = create_app(service_config=from_env(stack.env())).test_client()
    response = client.get(f"/v1/settings/{summary.id}", environ_overrides={"SCRIPT_NAME": "/api"})
    assert response.status_code == 200, response.status_code
    assert '"/api/api/v1/' not in response.get_data(as_text=True)
    assert f'"/api/v1/settings/{summary.id}/' in response.get_data(as_text=True)


def _serve(cwd: Path, env: dict[str, str], port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "expaudit", "serve", "--port", str(port),
                             "--workers", "1"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _worker_pids(serve: subprocess.Popen) -> list[int]:
    pids = []
    for pid in _descendants(serve.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"expaudit" in cmdline and b"worker" in cmdline:
            pids.append(pid)
    return pids


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_serve_restarts_its_worker_when_it_dies(tmp_path):
    summary, data = synthetic_setting("serve-k3", k=3)
    catalog = write_catalog(tmp_path / "catalog", (summary, data))
    port = free_port()
    env = service_env(EXPAUDIT_N_SHUFFLES="100", EXPAUDIT_N_BOOTSTRAP="100",
                      PYTHONPATH=str(REPO_ROOT), EXPAUDIT_CATALOG=str(catalog))
    serve = _serve(tmp_path, env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _healthy(url), 90, "serve to answer")
        first = _wait(lambda: _worker_pids(serve), 30, "the worker")
        os.kill(first[0], signal.SIGKILL)
        restarted = _wait(lambda: [p for p in _worker_pids(serve) if p not in first], 30,
                          "a new worker")
        assert serve.poll() is None and restarted
        admin = (tmp_path / "var" / "admin-token").read_text().strip()
        token = requests.post(f"{url}/api/v1/tokens", json={"name": "me", "owner": "me"}, timeout=60,
                              headers={"Authorization": f"Bearer {admin}"}).json()["token"]
        created = requests.post(f"{url}/api/v1/submissions", timeout=30,
                                headers={"Authorization": f"Bearer {token}"},
                                files={"file": ("s.csv", scores_csv(data))},
                                data={"setting": summary.id})
        assert created.status_code == 202, created.text
        status_url = f"{url}{created.json()['status_url']}"
        _wait(lambda: requests.get(status_url, timeout=60, headers={"Authorization": f"Bearer {token}"})
              .json()["state"] == "published", 120, "the submission to be published")
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(60)
        output = serve.stdout.read()
        serve.stdout.close()
    assert serve.returncode == 0, output
    assert "worker exited with -9; restarting it in 1 s" in output
    assert str(tmp_path) not in output.replace(str(tmp_path / "var" / "admin-token"), "")


def _healthy(url: str) -> bool:
    try:
        return requests.get(f"{url}/healthz", timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or busy starting
        return False


def test_the_web_role_of_the_image_applies_the_service_gunicorn_settings(tmp_path):
    """The entrypoint's web role started outside the repository (no gunicorn.conf.py in its
    working directory, as in the image): a SCRIPT_NAME header from 127.0.0.1 (gunicorn's
    trusted address) is dropped, not turned into a 500."""
    from tests.support.servers import ProcessServer, wait_for_port

    redis_server = RedisServer(tmp_path / "redis").start()
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("role-k3", k=3, n_states=2))
    port = free_port()
    env = service_env(PYTHONPATH=str(REPO_ROOT), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                      EXPAUDIT_PORT=str(port), EXPAUDIT_WEB_WORKERS="1", EXPAUDIT_STATE_DIR=str(tmp_path),
                      EXPAUDIT_REDIS_URL=redis_server.url, EXPAUDIT_CATALOG=str(catalog),
                      EXPAUDIT_STORE=str(tmp_path / "store"))
    env.pop("EXPAUDIT_FROZEN_ROOT", None)
    web = ProcessServer([str(REPO_ROOT / "docker" / "entrypoint.sh"), "web"], tmp_path / "web.log",
                        env=env, cwd=tmp_path).start()
    try:
        wait_for_port(port, 60, web.proc, web.log)
        health = requests.get(f"http://127.0.0.1:{port}/healthz", headers={"SCRIPT_NAME": "/evil"},
                              timeout=60)
        assert health.status_code == 200, health.text
    finally:
        web.stop()
        redis_server.stop()


def test_serve_prints_the_frozen_root_without_its_absolute_path(tmp_path, monkeypatch):
    from service.serve.embedded import shown_root

    (tmp_path / "data" / "frozen").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert shown_root((tmp_path / "data" / "frozen").resolve()) == "data/frozen"
    monkeypatch.chdir(tmp_path / "data" / "frozen")
    assert shown_root(tmp_path.resolve()) == "$EXPAUDIT_FROZEN_ROOT"


def test_serve_gives_gunicorn_the_documented_timeout():
    from service.process.defaults import WEB_TIMEOUT_S
    from service.serve.embedded import web_command

    command = web_command("127.0.0.1", 8000, 1)
    assert command[command.index("--timeout") + 1] == str(WEB_TIMEOUT_S)
    assert command[command.index("--config") + 1] == "python:service.process.gunicorn_conf"
