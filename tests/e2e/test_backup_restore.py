"""`expaudit service backup` of a running stack's store (the real S3 server), `restore` into a
fresh stack: the leaderboard, the submissions and the computed cells are the same."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import requests

from service.store.computed_cells import StoreCells
from service.store.storage import S3Store
from tests.support.servers import (ADMIN_TOKEN, RedisServer, ServiceStack, scores_csv,
                                   synthetic_setting, write_catalog)

pytestmark = pytest.mark.slow


def _cell(exp: str, state: str, seed: int) -> dict:
    return {"mechanism": "replay", "query_set": "stack-hidden", "experience_id": exp,
            "state_id": state, "seed": seed, "success": (seed + len(exp)) % 2,
            "state_hash": f"s-{state}", "final_hash": f"f-{exp}-{state}-{seed}", "wall_s": 0.3,
            "code_version": "v1", "packages": {"mujoco": "3"}}


def _final(url: str, auth: dict, sid: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = requests.get(f"{url}/api/v1/submissions/{sid}", headers=auth, timeout=10).json()
        if status["state"] in ("published", "failed"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"{sid} not final after {timeout} s")


def _views(url: str, auth: dict, setting_id: str) -> dict:
    """What a visitor and a submitter see: the leaderboard and the submitter's submissions."""
    board = requests.get(f"{url}/api/v1/leaderboard/{setting_id}", timeout=10)
    mine = requests.get(f"{url}/api/v1/submissions", headers=auth, timeout=10)
    assert board.status_code == mine.status_code == 200, (board.text, mine.text)
    return {"leaderboard": board.json(), "submissions": mine.json()}


def test_a_backup_restored_into_a_fresh_stack_serves_the_same(tmp_path, redis_server,
                                                              seaweed_server):
    setting = synthetic_setting("backup-k4", k=4, n_states=6, draws=2, seeds=3)
    catalog = write_catalog(tmp_path / "catalog", setting)
    buckets = [f"backup-{uuid.uuid4().hex[:8]}", f"restore-{uuid.uuid4().hex[:8]}"]
    for bucket in buckets:
        seaweed_server.make_bucket(bucket)
    old = ServiceStack(tmp_path / "old", redis_server, catalog, seaweed_server, buckets[0])
    fresh_redis = RedisServer(tmp_path / "fresh-redis").start()
    new = ServiceStack(tmp_path / "new", fresh_redis, catalog, seaweed_server, buckets[1])
    stores = [S3Store(seaweed_server.client(), bucket, "svc") for bucket in buckets]
    backup = tmp_path / "store-backup.tar.gz"
    try:
        old.start_web(workers=1)
        old.start_worker()
        made = requests.post(f"{old.url}/api/v1/tokens", json={"name": "lab", "owner": "lab"},
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        auth = {"Authorization": f"Bearer {made.json()['token']}"}
        summary, data = setting
        for seed in (1, 2):
            sent = requests.post(f"{old.url}/api/v1/submissions", headers=auth,
                                 files={"file": ("s.csv", scores_csv(data, seed=seed), "text/csv")},
                                 data={"setting": summary.id, "public": "true"}, timeout=30)
            assert sent.status_code == 202, sent.text
            assert _final(old.url, auth, sent.json()["id"])["state"] == "published"
        computed = StoreCells(stores[0])  # cells as runners store them, one chunk folded
        computed.put_chunk("replay", "stack-hidden", [_cell("e0", "s0", s) for s in range(5)])
        computed.fold("replay", "stack-hidden")
        computed.put_chunk("replay", "stack-hidden", [_cell("e1", "s0", 0)])
        before = _views(old.url, auth, summary.id)
        assert len(before["submissions"]["submissions"]) == 2
        board = json.dumps(before["leaderboard"])
        assert all(sub["id"] in board for sub in before["submissions"]["submissions"])
        keys = stores[0].list_keys("")

        done = old.run_cli("service", "backup", "--to", str(backup))  # the stack is running
        assert done.returncode == 0, done.stderr
        restored = new.run_cli("service", "restore", "--from", str(backup))
        assert restored.returncode == 0, restored.stderr
        again = new.run_cli("service", "restore", "--from", str(backup))
        assert again.returncode == 2 and "already holds" in again.stderr  # not over a store

        new.start_web(workers=1)
        new.start_worker()
        assert _views(new.url, auth, summary.id) == before  # the same token works there too
        assert set(keys) <= set(stores[1].list_keys(""))
        assert all(stores[1].get_bytes(k) == stores[0].get_bytes(k) for k in keys)
        restored_cells = StoreCells(stores[1])
        assert sorted(map(str, restored_cells.records("replay", "stack-hidden"))) == \
            sorted(map(str, computed.records("replay", "stack-hidden")))
        assert len(restored_cells.records("replay", "stack-hidden")) == 6
    finally:
        new.stop()
        old.stop()
        fresh_redis.stop()
