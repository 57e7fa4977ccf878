"""Faults on the real stack: a worker killed mid-audit, Redis restarted empty, S3 down for a while.

After each fault every accepted submission must end `published` or `failed`
with a reason: none lost, none duplicated.
"""

from __future__ import annotations

import time
import uuid

import pytest
import redis
import requests

from tests.support.servers import (ADMIN_TOKEN, RedisServer, SeaweedServer, ServiceStack, bearer,
                                   scores_csv, synthetic_setting, write_catalog)
from tests.support.submissions import post_submission, wait_final

pytestmark = pytest.mark.slow

FINAL = ("published", "failed")


@pytest.fixture()
def servers(tmp_path):
    redis_server = RedisServer(tmp_path / "redis").start()
    seaweed = SeaweedServer(tmp_path / "weed").start()
    bucket = f"faults-{uuid.uuid4().hex[:8]}"
    seaweed.make_bucket(bucket)
    yield redis_server, seaweed, bucket
    seaweed.stop()
    redis_server.stop()


@pytest.fixture()
def setting():
    # K=20 on 200 scenes; with 60,000 resamples an audit takes about 1.7 s on
    # one core (20,000: under half a second, which a loaded machine's polling
    # and kill could miss), long enough to kill the worker while one runs.
    return synthetic_setting("fault-k20", k=20, n_states=40, draws=5, seeds=3)


def _stack(tmp_path, servers, setting, **env) -> ServiceStack:
    redis_server, seaweed, bucket = servers
    catalog = write_catalog(tmp_path / "catalog", setting)
    stack = ServiceStack(tmp_path / "stack", redis_server, catalog, seaweed, bucket, extra_env=env)
    stack.start_web()
    return stack


def _token(stack) -> dict:
    response = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "faults", "owner": "faults"},
                             headers=bearer(ADMIN_TOKEN), timeout=10)
    assert response.status_code == 201, response.text
    return bearer(response.json()["token"])


def _wait_final(stack, auth, sids, timeout=120.0) -> dict[str, dict]:
    """The final status of every submission in `sids`, all within `timeout`."""
    deadline = time.monotonic() + timeout
    return {sid: wait_final(stack, auth, sid, max(0.0, deadline - time.monotonic())) for sid in sids}


def _check_none_lost_or_duplicated(stack, auth, sids, statuses) -> None:
    for sid, status in statuses.items():
        assert status["state"] == "published", (sid, status, stack.logs())
    mine = requests.get(f"{stack.url}/api/v1/submissions", headers=auth, timeout=10).json()
    assert sorted(s["id"] for s in mine["submissions"]) == sorted(sids)
    rows = requests.get(f"{stack.url}/api/v1/leaderboard/fault-k20", timeout=10).json()["rows"]
    row_ids = [r["submission_id"] for r in rows if r["kind"] == "submission"]
    assert sorted(row_ids) == sorted(f"{sid}.fault-k20" for sid in sids)


def _check_no_secret_in_logs(stack, auth) -> None:
    requests.get(f"{stack.url}/api/v1/submissions", headers=bearer("wrong-token"), timeout=10)
    logs = stack.logs()
    assert "warn" in logs.lower() or "INFO" in logs  # the processes did log
    for secret in (auth["Authorization"].split()[1], ADMIN_TOKEN, "expaudit-test-secret"):
        assert secret not in logs


def test_worker_killed_mid_audit(tmp_path, servers, setting):
    summary, data = setting
    stack = _stack(tmp_path, servers, setting, EXPAUDIT_N_SHUFFLES="60000", EXPAUDIT_N_BOOTSTRAP="60000")
    try:
        auth = _token(stack)
        worker = stack.start_worker()
        sids = [post_submission(stack.url, auth, "file", f"s{seed}.csv",
                                scores_csv(data, seed=seed),
                                setting="fault-k20", public="true", name=f"rule {seed}").json()["id"]
                for seed in range(3)]
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:
            for sid in sids:
                status = requests.get(f"{stack.url}/api/v1/submissions/{sid}", headers=auth,
                                      timeout=10).json()
                if status["state"] == "scoring" and not status["reports"]:
                    victim = sid
                    break
            time.sleep(0.02)
        assert victim is not None, stack.logs()
        worker.crash()
        status = requests.get(f"{stack.url}/api/v1/submissions/{victim}", headers=auth, timeout=10).json()
        assert status["state"] == "scoring" and status["reports"] == []  # killed mid-audit

        conn = redis.Redis.from_url(stack.redis.url)
        lease_deadline = time.monotonic() + 20
        while conn.exists(f"expaudit:lease:{victim}") and time.monotonic() < lease_deadline:
            time.sleep(0.2)
        assert not conn.exists(f"expaudit:lease:{victim}"), "the dead worker's lease did not lapse"
        reconciled = stack.run_cli("reconcile")
        assert reconciled.returncode == 0, reconciled.stderr
        assert f"re-enqueued: 1 ({victim})" in reconciled.stdout, reconciled.stdout
        stack.start_worker()
        statuses = _wait_final(stack, auth, sids)
        _check_none_lost_or_duplicated(stack, auth, sids, statuses)
        assert statuses[victim]["attempts"] >= 2
    finally:
        stack.stop()


def test_redis_restarted_empty(tmp_path, servers, setting):
    summary, data = setting
    stack = _stack(tmp_path, servers, setting)
    try:
        auth = _token(stack)
        stack.start_worker()
        sids = [post_submission(stack.url, auth, "file", f"s{seed}.csv",
                                scores_csv(data, seed=seed),
                                setting="fault-k20", public="true", name=f"rule {seed}").json()["id"]
                for seed in range(3)]
        stack.redis.crash()  # queues, caches, leases: all gone
        during = post_submission(stack.url, auth, "file", "s99.csv", scores_csv(data, seed=99),
                                 setting="fault-k20", public="true", name="rule 99")
        assert during.status_code == 202, during.text  # stored; enqueued once Redis is back
        sids.append(during.json()["id"])
        assert requests.get(f"{stack.url}/healthz", timeout=10).status_code == 503
        time.sleep(1.0)
        stack.redis.start()
        statuses = _wait_final(stack, auth, sids)
        _check_none_lost_or_duplicated(stack, auth, sids, statuses)
        _check_no_secret_in_logs(stack, auth)
    finally:
        stack.stop()


def test_s3_unavailable_for_a_while(tmp_path, servers, setting):
    summary, data = setting
    stack = _stack(tmp_path, servers, setting)
    seaweed = servers[1]
    try:
        auth = _token(stack)
        stack.start_worker()
        sids = [post_submission(stack.url, auth, "file", f"s{seed}.csv",
                                scores_csv(data, seed=seed),
                                setting="fault-k20", public="true", name=f"rule {seed}").json()["id"]
                for seed in range(3)]
        seaweed.crash()
        refused = post_submission(stack.url, auth, "file", "s50.csv", scores_csv(data, seed=50),
                                 setting="fault-k20", public="true", name="rule 50")
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "unavailable"
        health = requests.get(f"{stack.url}/healthz", timeout=10)
        assert health.status_code == 503 and health.json()["store"].startswith("unavailable")
        time.sleep(3.0)
        seaweed.start()
        statuses = _wait_final(stack, auth, sids)
        _check_none_lost_or_duplicated(stack, auth, sids, statuses)
        _check_no_secret_in_logs(stack, auth)
    finally:
        stack.stop()
