"""`expaudit serve` on embedded defaults: its own Redis, a local store under var/, one command."""

from __future__ import annotations

import os
import signal
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from service.process.defaults import ROLLOUT_QUEUE
from service.store.computed_cells import StoreCells
from service.store.storage import LocalStore
from tests.support.paths import REPO_ROOT
from tests.support.servers import (ADMIN_TOKEN, ServiceStack, free_port, read_until, scores_csv,
                                   service_env, synthetic_setting, write_catalog)

pytestmark = pytest.mark.slow


def _serve_env(**overrides) -> dict[str, str]:
    """The environment of `expaudit serve` in these tests: small resampling counts."""
    return service_env(EXPAUDIT_N_SHUFFLES="100", EXPAUDIT_N_BOOTSTRAP="100",
                       PYTHONPATH=str(REPO_ROOT), **overrides)


def _serve(cwd, env: dict[str, str], port: int) -> subprocess.Popen:
    """`expaudit serve` with one web worker, in its own session (the test stops the group)."""
    return subprocess.Popen([sys.executable, "-m", "expaudit", "serve", "--port", str(port),
                             "--workers", "1"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_serve_starts_everything_and_stops_cleanly(tmp_path):
    summary, data = synthetic_setting("serve-k3", k=3)
    catalog = write_catalog(tmp_path / "catalog", (summary, data))
    port = free_port()
    env = _serve_env(EXPAUDIT_CATALOG=str(catalog))
    proc = _serve(tmp_path, env, port)
    try:
        early: list[str] = []
        line = read_until(proc, "expaudit is serving at", 90, early)
        url = f"http://127.0.0.1:{port}"
        assert url in line and "var/admin-token" in line
        assert "no rollout runner: EXPAUDIT_CATALOG" in "".join(early)
        running = " | ".join(_live_processes_of(proc.pid, str(tmp_path)))
        assert "redis-server" in running and "gunicorn" in running and "worker" in running
        admin = (tmp_path / "var" / "admin-token").read_text().strip()
        assert oct((tmp_path / "var" / "admin-token").stat().st_mode)[-3:] == "600"
        assert admin not in line
        index = requests.get(f"{url}/", timeout=10)
        assert index.status_code == 200 and "serve-k3" in index.text  # published before serving
        token = requests.post(f"{url}/api/v1/tokens", json={"name": "me", "owner": "me"},
                              headers={"Authorization": f"Bearer {admin}"}, timeout=10).json()["token"]
        scores = tmp_path / "scores.csv"
        scores.write_bytes(scores_csv(data))
        cli_env = {**env, "EXPAUDIT_SERVER": url, "EXPAUDIT_TOKEN": token}
        submitted = subprocess.run([sys.executable, "-m", "expaudit", "submit", str(scores),
                                    "--setting", "serve-k3", "--public", "--wait"], env=cli_env,
                                   capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert "published" in submitted.stdout
        assert (tmp_path / "var" / "store" / "leaderboard" / "index.html").is_file()
        assert (tmp_path / "var" / "redis" / "appendonlydir").is_dir()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # as a Ctrl-C at the terminal: the whole group
        proc.wait(30)
        os.set_blocking(proc.stdout.fileno(), True)
        shutdown = proc.stdout.read()
        proc.stdout.close()
    assert proc.returncode == 0
    assert "Traceback" not in shutdown and "could not connect to Redis" not in shutdown, shutdown
    assert _wait_for_exit(proc.pid, str(tmp_path), 30) == []  # web, worker, runner and Redis
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    _assert_no_worker_left_registered(tmp_path / "var" / "redis")


def _live_processes_of(pgid: int, directory: str) -> list[str]:
    """Command lines of the live processes (zombies have exited) in group `pgid` or working
    under `directory` (the embedded Redis runs in its own session, in its data directory)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cwd = os.readlink(stat.parent / "cwd")
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue  # exited while being read
        if fields[0] != "Z" and (int(fields[2]) == pgid or cwd.startswith(directory)):
            found.append(cmdline)
    return found


def _wait_for_exit(pgid: int, directory: str, timeout: float) -> list[str]:
    """Poll the process table until every process of the stopped serve has exited; returns
    what is left at `timeout`."""
    deadline = time.monotonic() + timeout
    while (left := _live_processes_of(pgid, directory)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _assert_no_worker_left_registered(redis_dir) -> None:
    """Redis persists to `redis_dir`: restarted from it, it must list no worker of the stopped serve."""
    import redis
    from rq import Worker

    from service.serve.embedded import start_redis

    server, url = start_redis(redis_dir)
    try:
        conn = redis.Redis.from_url(url)
        assert Worker.all(connection=conn) == [], "a stopped serve left workers registered"
        conn.close()
    finally:
        server.terminate()
        server.wait(10)


def _runner_config(redis_url: str, **overrides):
    from service.process.config import ServiceConfig

    return ServiceConfig(redis_url=redis_url, **overrides)


def _listeners(redis_url: str, queue: str, expected: int, timeout: float) -> int:
    """Workers registered on `queue` once there are `expected` of them, or at `timeout`."""
    import redis
    from rq import Queue, Worker

    conn = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            count = len(Worker.all(queue=Queue(queue, connection=conn)))
            if count == expected or time.monotonic() >= deadline:
                return count
            time.sleep(0.3)
    finally:
        conn.close()


def test_serve_starts_a_rollout_runner_on_the_frozen_root_it_serves(tmp_path, redis_server,
                                                                    monkeypatch):
    from service.serve.embedded import frozen_root, start_runner

    root = tmp_path / "frozen"
    root.mkdir()
    monkeypatch.chdir(tmp_path)  # printed relative to the current directory, never absolute
    config = _runner_config(redis_server.url, frozen_root=str(root))
    env = service_env(PYTHONPATH=str(REPO_ROOT), EXPAUDIT_REDIS_URL=redis_server.url)
    children: list[subprocess.Popen] = []
    try:
        note = start_runner(config, env, children)
        assert note == "rollout runner started: missing cells go to the store (var/store)"
        assert frozen_root(config) == root.resolve()
        assert len(children) == 1 and children[0].args[-2:] == ["--frozen-root", str(root.resolve())]
        assert _listeners(redis_server.url, ROLLOUT_QUEUE, 1, 60) == 1, \
            "the runner never served `rollouts`"
        assert _listeners(redis_server.url, "selectors", 1, 10) == 1, "the runner serves `selectors`"
    finally:
        for child in children:
            child.terminate()
            child.wait(30)
    assert _listeners(redis_server.url, ROLLOUT_QUEUE, 0, 5) == 0, "a stopped runner is registered"


def test_serve_says_why_it_starts_no_runner(tmp_path, redis_server, monkeypatch):
    from service.serve.embedded import simulator_missing, start_runner

    children: list[subprocess.Popen] = []
    with_catalog = _runner_config(redis_server.url, catalog=str(tmp_path))
    assert start_runner(with_catalog, {}, children).startswith(
        "no rollout runner: EXPAUDIT_CATALOG serves complete directory settings")
    monkeypatch.setitem(sys.modules, "robosuite", None)  # how Python blocks an import
    assert simulator_missing() == "robosuite is not installed (pip install 'expaudit[sim]')"
    note = start_runner(_runner_config(redis_server.url, frozen_root=str(tmp_path)), {}, children)
    assert note.startswith("no rollout runner: robosuite is not installed")
    assert "expaudit runner --frozen-root $EXPAUDIT_FROZEN_ROOT" in note  # outside the current directory
    assert str(tmp_path) not in note
    assert children == []


def test_submit_wait_prints_rollout_progress_and_state_changes(tmp_path, redis_server):
    """The waiting client follows a submission whose audit waits for runners: every change
    of the rollout count is a line, as is every change of state; the failure ends it."""
    from expaudit_client import Client
    from service.submissions.records import Fault, State, Status, SubmissionRepo
    from service.store.storage import LocalStore

    summary, data = synthetic_setting("wait-k3", k=3)
    stack = ServiceStack(tmp_path, redis_server, write_catalog(tmp_path / "catalog", (summary, data)))
    scores = tmp_path / "scores.csv"
    scores.write_bytes(scores_csv(data))
    proc = None
    try:
        stack.start_web(workers=1)  # no worker: the test moves the submission itself
        token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "waiter", "owner": "waiter"},
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        env = {**stack.env(), "EXPAUDIT_SERVER": stack.url, "EXPAUDIT_TOKEN": token.json()["token"]}
        proc = subprocess.Popen([sys.executable, "-m", "expaudit", "submit", str(scores),
                                 "--setting", "wait-k3", "--wait"], cwd=REPO_ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = read_until(proc, "queued", 60)
        sid = first.split()[0]
        read_until(proc, f"status: {stack.url}/api/v1/submissions/{sid}", 10)
        repo = SubmissionRepo(LocalStore(tmp_path / "store"))
        steps = [(Status(State.RUNNING, 0.05, rollouts={"done": 0, "total": 100,
                                                         "chunks_pending": 2, "runners": 0}),
                  "running      5.0%  rollouts 0/100 (no runner connected)"),
                 (Status(State.RUNNING, 0.05, rollouts={"done": 50, "total": 100,
                                                         "chunks_pending": 1, "runners": 1}),
                  "running      5.0%  rollouts 50/100"),
                 (Status(State.FAILED, 0.05, reason="rollout chunk x failed 3 times",
                         fault=Fault.INFRASTRUCTURE,
                         rollouts={"done": 50, "total": 100, "chunks_pending": 1, "runners": 1}),
                  "failed       5.0%  rollouts 50/100  rollout chunk x failed 3 times  "
                  "(fault: infrastructure)")]
        for n, (status, expected) in enumerate(steps):
            repo.write_status(sid, status)
            line = read_until(proc, "%", 30)
            assert line.rstrip("\n") == f"{sid}  {expected}"
            if n == 1:  # a wait gives up only after a whole timeout without any change
                client = Client(stack.url, env["EXPAUDIT_TOKEN"])
                seen: list[dict] = []
                with pytest.raises(TimeoutError, match=f"{sid} still running with no change "
                                                       "for 1.0 s"):
                    client.wait(sid, timeout=1.0, on_update=seen.append, interval=0.1)
                assert [s["rollouts"]["done"] for s in seen] == [50]
        assert proc.wait(30) == 1
        os.set_blocking(proc.stdout.fileno(), True)
        assert proc.stdout.read() == ""  # nothing printed twice for an unchanged status
    finally:
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            proc.stdout.close()
        stack.stop()


@pytest.mark.sim
def test_serve_alone_fills_a_sealed_setting_with_its_runner(tmp_path):
    """`expaudit serve` with nothing else running: a submission to the sealed setting,
    whose cells are not stored, is computed by the runner `serve` started, on the frozen
    root `serve` serves, and published; the client shows the rollouts moving."""
    from tests.support.rollouts import HIDDEN, HIDDEN_STATES, hidden_scores
    from tests.support.tiny_frozen import (copy_library, copy_query_set, experience_ids,
                                           real_data_available)

    if not real_data_available():
        pytest.skip("frozen data not built")
    root = tmp_path / "frozen"
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", HIDDEN_STATES)
    scores = tmp_path / "scores.csv"
    scores.write_bytes(hidden_scores(root, seed=1))
    port = free_port()
    env = _serve_env(EXPAUDIT_FROZEN_ROOT=str(root))
    proc = _serve(tmp_path, env, port)
    try:
        early: list[str] = []
        read_until(proc, "expaudit is serving at", 120, early)
        assert "rollout runner started: missing cells go to the store (var/store)\n" in early
        url = f"http://127.0.0.1:{port}"
        admin = (tmp_path / "var" / "admin-token").read_text().strip()
        token = requests.post(f"{url}/api/v1/tokens", json={"name": "sealed", "owner": "sealed"},
                              headers={"Authorization": f"Bearer {admin}"}, timeout=10).json()["token"]
        submitted = subprocess.run([sys.executable, "-m", "expaudit", "submit", str(scores),
                                    "--setting", HIDDEN, "--wait"], capture_output=True, text=True,
                                   env={**env, "EXPAUDIT_SERVER": url, "EXPAUDIT_TOKEN": token},
                                   timeout=400, cwd=tmp_path)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        lines = submitted.stdout.splitlines()
        # Progress before the end (how far the runner got by the first poll is a race).
        done = [int(m.group(1)) for m in map(re.compile(r"rollouts (\d+)/50$").search, lines) if m]
        assert done and min(done) < 50, lines
        states = [line for line in lines if line.startswith("sub-")]
        assert states[-1].split()[1:] == ["published", "100.0%", "rollouts", "50/50"], lines
        assert any(line.startswith(f"{HIDDEN}: sealed") for line in lines), lines  # the verdict
        computed = StoreCells(LocalStore(tmp_path / "var" / "store"))  # the service's state
        assert len(computed.stored("replay", "stack-hidden")) == 50
        assert not (root / "cells").exists()  # the frozen root is only read
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        proc.stdout.close()
    assert proc.returncode == 0


def test_worker_queue_settings_are_read_and_checked():
    from service.serve.embedded import worker_command
    from service.process.config import ConfigError, from_env

    assert from_env({}).worker_queues == ("publish", "audit")
    assert from_env({"EXPAUDIT_WORKER_QUEUES": "publish, audit,selectors"}).worker_queues == \
        ("publish", "audit", "selectors")
    with pytest.raises(ConfigError, match=r"EXPAUDIT_WORKER_QUEUES .*got 'audit,rollouts'"):
        from_env({"EXPAUDIT_WORKER_QUEUES": "audit,rollouts"})
    assert worker_command()[-3:] == ["worker", "--queues", "publish,audit,selectors"]


def test_a_worker_serves_selectors_only_when_told(tmp_path, redis_server):
    env = service_env(PYTHONPATH=str(REPO_ROOT), EXPAUDIT_REDIS_URL=redis_server.url,
                      EXPAUDIT_STORE=str(tmp_path / "store"))
    plain = subprocess.Popen([sys.executable, "-m", "expaudit", "worker"], env=env, cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    told = None
    try:
        assert _listeners(redis_server.url, "audit", 1, 60) == 1
        assert _listeners(redis_server.url, "selectors", 1, 0) == 0
        told = subprocess.Popen([sys.executable, "-m", "expaudit", "worker", "--queues",
                                 "publish,audit,selectors"], env=env, cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert _listeners(redis_server.url, "selectors", 1, 60) == 1
        assert _listeners(redis_server.url, "audit", 2, 5) == 2
    finally:
        for proc in (plain, told):
            if proc is not None:
                proc.terminate()
                proc.wait(30)
    assert _listeners(redis_server.url, "audit", 0, 5) == 0, "a stopped worker is registered"
