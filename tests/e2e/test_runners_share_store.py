"""Runners that share only Redis and the object store (the real S3 server) with each other and
with the worker: separate frozen roots, separate working directories, no shared directory. A
sealed submission's missing cells are filled by both, audited and published; every cell is
stored once; a runner killed mid-chunk loses none of the cells it stored (docs/self_hosting.md,
docs/runners.md)."""

from __future__ import annotations

import sys
import time
import uuid

import pytest
import redis
import requests
from rq import Queue

from service.process import defaults
from service.store.computed_cells import StoreCells, folder
from service.store.storage import S3Store
from tests.support.paths import REPO_ROOT
from tests.support.rollouts import HIDDEN, HIDDEN_STATES, hidden_scores
from tests.support.servers import ADMIN_TOKEN, ProcessServer, ServiceStack
from tests.support.tiny_frozen import (copy_library, copy_query_set, experience_ids,
                                       real_data_available)

pytestmark = [pytest.mark.sim, pytest.mark.slow,
              pytest.mark.skipif(not real_data_available(), reason="frozen data not built")]

MECH, QS = "replay", "stack-hidden"
HEARTBEAT_S = 10
"""The runners' `--heartbeat-s`: a killed runner's chunk is abandoned this long after its last
beat, and failed at the next maintenance of a live runner (at most as long again)."""


def _frozen_copy(root):
    """A frozen root of its own: the hidden setting's library and its one state."""
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", HIDDEN_STATES)
    return root


def _runner(stack: ServiceStack, name: str, home, root) -> ProcessServer:
    """`expaudit runner` in its own working directory, on its own frozen root and (read-only,
    empty) legacy cells directory: only Redis and the store are shared."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = {**stack.env(), "EXPAUDIT_FROZEN_ROOT": str(root),
           "EXPAUDIT_CELLS_DIR": str(home / "cells"), "PYTHONPATH": str(REPO_ROOT)}
    return ProcessServer([sys.executable, "-m", "expaudit", "runner", "--heartbeat-s",
                          str(HEARTBEAT_S)], home / f"{name}.log", env=env, cwd=work).start()


def _wait(predicate, timeout: float, what: str, logs) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen after {timeout} s:\n{logs()}")
        time.sleep(0.1)


def test_two_runners_on_other_hosts_fill_a_sealed_setting_through_the_store(
        tmp_path, redis_server, seaweed_server):
    bucket = f"share-{uuid.uuid4().hex[:8]}"
    seaweed_server.make_bucket(bucket)
    worker_root = _frozen_copy(tmp_path / "main" / "frozen")
    stack = ServiceStack(tmp_path / "main", redis_server, tmp_path / "no-catalog", seaweed_server,
                         bucket, extra_env={"EXPAUDIT_CATALOG": "",
                                            "EXPAUDIT_FROZEN_ROOT": str(worker_root),
                                            "EXPAUDIT_CELLS_DIR": str(tmp_path / "main" / "cells")})
    hosts = {name: tmp_path / name for name in ("host-a", "host-b")}
    roots = {name: _frozen_copy(home / "frozen") for name, home in hosts.items()}
    computed = StoreCells(S3Store(seaweed_server.client(), bucket, "svc"))
    chunk_prefix = f"{folder(MECH, QS)}/chunks/"
    runners: list[ProcessServer] = []

    def logs() -> str:
        return stack.logs() + "".join(f"\n--- {r.log.name}\n{r.log_tail(3000)}" for r in runners)

    try:
        stack.start_web(workers=1)
        stack.start_worker()
        runners.append(_runner(stack, "runner-a", hosts["host-a"], roots["host-a"]))
        token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "lab", "owner": "lab"},
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        auth = {"Authorization": f"Bearer {token.json()['token']}"}
        sent = requests.post(f"{stack.url}/api/v1/submissions", headers=auth,
                             files={"file": ("s.csv", hidden_scores(worker_root, 1), "text/csv")},
                             data={"setting": HIDDEN, "public": "true"}, timeout=30)
        assert sent.status_code == 202, sent.text
        sid = sent.json()["id"]

        # Runner A stores its first cells, then is killed in the middle of its chunk.
        _wait(lambda: computed.store.list_keys(chunk_prefix), 300, "a first chunk of cells", logs)
        runners[0].crash()
        before = {_key(r): r for r in computed.records(MECH, QS)}
        assert 1 <= len(before) < 50
        redis_conn = redis.Redis.from_url(redis_server.url)
        started = Queue(defaults.ROLLOUT_QUEUE, connection=redis_conn).started_job_registry
        assert len(started.get_job_ids()) == 1  # its chunk is left half done, still "started"

        killed_chunk = started.get_job_ids()[0]

        # Runner B, on another host, takes the other chunks, then the killed one once its
        # heartbeat has lapsed: it runs again, skipping the cells stored before the kill.
        runners.append(_runner(stack, "runner-b", hosts["host-b"], roots["host-b"]))

        status: dict = {}

        def final() -> bool:
            status.update(requests.get(f"{stack.url}/api/v1/submissions/{sid}", headers=auth,
                                       timeout=10).json())
            return status["state"] in ("published", "failed")

        _wait(final, 600, "the submission's end", logs)
        assert status["state"] == "published", (status, logs())
        assert status["rollouts"]["done"] == status["rollouts"]["total"] == 50

        stored = computed.stored(MECH, QS)
        keys = {_key(r) for r in stored}
        assert len(stored) == len(keys) == 50  # every cell once
        after = {_key(r): r for r in stored}
        assert all(after[k] == record for k, record in before.items())  # nothing A stored lost
        assert computed.store.list_keys(chunk_prefix) == []  # folded into one table
        assert len(computed.store.list_keys(f"{folder(MECH, QS)}/tables/")) == 1
        assert f"Job OK ({killed_chunk})" in runners[1].log.read_text()  # B ran it again
        for home in (*hosts.values(), tmp_path / "main"):  # nobody wrote a cells directory
            assert not (home / "cells").exists()
            assert not list((home / "frozen").rglob("*.journal.jsonl"))
    finally:
        for runner in runners:
            runner.stop()
        stack.stop()


def _key(record: dict) -> tuple:
    return (record["experience_id"], record["state_id"], int(record["seed"]))
