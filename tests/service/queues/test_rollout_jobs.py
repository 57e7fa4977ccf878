"""Missing rollouts: chunk planning, deduplicated enqueueing on real Redis, the runner's
journal, and (sim) a sealed setting filled on demand through the real processes."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import requests
from rq import Queue

from leaderboard.matrix import MISSING, SceneTable, TransferData
from service.runner.rollout_runner import (ChunkError, RunnerContext, append_record, chunk_world,
                                  parse_chunk, run_chunk)
from service.process import defaults
from service.store.computed_cells import StoreCells
from service.store.storage import LocalStore
from service.queues import rollout_jobs
from service.queues.rollout_jobs import Chunk, RolloutsStuck, ensure_chunks, plan_rollouts
from tests.support.paths import REPO_ROOT
from tests.support.servers import ADMIN_TOKEN, ProcessServer, ServiceStack
from tests.support.tiny_frozen import (copy_library, copy_query_set, experience_ids,
                                       real_data_available)
from tests.support.rollouts import HIDDEN, HIDDEN_STATES, hidden_scores
from tests.support.submissions import report_keys, wait_final


def _data(k: int = 2, n_states: int = 3, draws: int = 2, seeds: int = 2) -> TransferData:
    q = n_states * draws
    scenes = SceneTable(scene_ids=tuple(f"q{j}" for j in range(q)),
                        state_ids=np.array([f"st{j // draws}" for j in range(q)], dtype=object),
                        layout_level=np.zeros(q, dtype=np.int64),
                        appearance_draw=np.array([j % draws for j in range(q)], dtype=np.int64))
    return TransferData(tuple(f"e{i}" for i in range(k)), scenes,
                        np.ones((k, q, seeds), dtype=np.int8))


def _with_missing(data: TransferData, cells: list[tuple[int, int, int]]) -> TransferData:
    outcomes = data.outcomes.copy()
    for i, q, s in cells:
        outcomes[i, q, s] = MISSING
    return TransferData(data.experience_ids, data.scenes, outcomes)


# ------------------------------------------------------------------ planning


def test_plan_counts_cells_per_physical_state_and_chunks_what_is_missing():
    data = _with_missing(_data(), [(0, 2, 0), (0, 3, 0), (1, 4, 1)])  # states st1 (e0), st2 (e1)
    plan = plan_rollouts(data, "replay", "qs", chunk_states=2)
    assert (plan.done, plan.total) == (2 * 3 * 2 - 2, 2 * 3 * 2)
    assert [(c.experience_id, c.state_ids) for c in plan.pending] == [
        ("e0", ("st0", "st1")), ("e1", ("st2",))]
    assert all(c.seeds == (0, 1) for c in plan.pending)
    assert not plan.complete


def test_chunk_ids_are_the_same_for_every_submission_that_needs_the_chunk():
    first = plan_rollouts(_with_missing(_data(), [(0, 2, 0)]), "replay", "qs", chunk_states=2)
    second = plan_rollouts(_with_missing(_data(), [(0, 0, 1), (0, 3, 1)]), "replay", "qs",
                           chunk_states=2)
    assert [c.job_id for c in first.pending] == [c.job_id for c in second.pending]
    other_query_set = plan_rollouts(_with_missing(_data(), [(0, 2, 0)]), "replay", "qs2",
                                    chunk_states=2)
    assert first.pending[0].job_id != other_query_set.pending[0].job_id
    assert Chunk.from_dict(first.pending[0].to_dict()) == first.pending[0]


def test_a_complete_matrix_plans_nothing():
    plan = plan_rollouts(_data(), "replay", "qs")
    assert plan.complete and plan.pending == ()
    assert plan_rollouts(_data(), "policy", "qs").pending == ()


def test_an_image_policy_is_planned_per_scene():
    # q3 is the second render of st1: a policy cell of its own, but no Replay cell
    data = _with_missing(_data(), [(0, 3, 0), (1, 4, 1), (1, 5, 1)])
    plan = plan_rollouts(data, "policy", "qs", chunk_states=2)
    assert (plan.done, plan.total) == (2 * 6 * 2 - 3, 2 * 6 * 2)
    assert [(c.mechanism, c.experience_id, c.state_ids) for c in plan.pending] == [
        ("policy", "e0", ("q2", "q3")), ("policy", "e1", ("q4", "q5"))]
    assert all(c.seeds == (0, 1) and c.n_cells == 4 for c in plan.pending)
    replay = plan_rollouts(data, "replay", "qs", chunk_states=2)
    assert (replay.done, replay.total) == (2 * 3 * 2 - 1, 2 * 3 * 2)
    assert [(c.experience_id, c.state_ids) for c in replay.pending] == [("e1", ("st2",))]


def test_policy_chunks_are_shared_by_submissions_and_apart_from_policy_dr():
    first = plan_rollouts(_with_missing(_data(), [(0, 3, 0)]), "policy", "qs", chunk_states=2)
    second = plan_rollouts(_with_missing(_data(), [(0, 2, 1)]), "policy", "qs", chunk_states=2)
    assert [c.job_id for c in first.pending] == [c.job_id for c in second.pending]
    randomized = plan_rollouts(_with_missing(_data(), [(0, 3, 0)]), "policy_dr", "qs",
                               chunk_states=2)
    assert first.pending[0].state_ids == randomized.pending[0].state_ids
    assert first.pending[0].job_id != randomized.pending[0].job_id


def test_a_policy_setting_is_planned_over_its_scene_ids():
    from benchmark_data.query_sets import read_scenes as load_scenes

    scenes = load_scenes("stack-orig")
    q = len(scenes)
    data = TransferData(("stack-e000", "stack-e001", "stack-e002"),
                        SceneTable(scene_ids=tuple(scenes["scene_id"]),
                                   state_ids=scenes["state_id"].to_numpy(),
                                   layout_level=scenes["layout_level"].to_numpy(dtype=np.int64),
                                   appearance_draw=scenes["appearance_draw"].to_numpy(
                                       dtype=np.int64)),
                        np.full((3, q, 5), MISSING, dtype=np.int8))
    plan = plan_rollouts(data, "policy", "stack-orig")
    assert (plan.done, plan.total) == (0, 3 * q * 5)
    assert len(plan.pending) == 3 * -(-q // defaults.ROLLOUT_CHUNK_STATES)
    assert sum(c.n_cells for c in plan.pending) == plan.total
    first = plan.pending[0]
    assert first.state_ids == tuple(scenes["scene_id"][:defaults.ROLLOUT_CHUNK_STATES])
    assert set(first.state_ids) <= set(scenes["scene_id"]) and first.seeds == (0, 1, 2, 3, 4)


def test_an_unknown_mechanism_is_not_planned():
    with pytest.raises(ValueError, match=r"mechanism 'diffusion' is not one of"):
        plan_rollouts(_data(), "diffusion", "qs")


# ------------------------------------------------------------- enqueueing


def test_chunks_are_enqueued_once_across_concurrent_audits(redis_conn):
    plan = plan_rollouts(_with_missing(_data(k=3), [(0, 0, 0), (2, 5, 1)]), "replay", "qs",
                         chunk_states=3)
    first = ensure_chunks(redis_conn, plan.pending)
    second = ensure_chunks(redis_conn, plan.pending)
    assert [j.id for j in first] == [j.id for j in second] == [c.job_id for c in plan.pending]
    queue = Queue(defaults.ROLLOUT_QUEUE, connection=redis_conn)
    assert sorted(queue.job_ids) == sorted(c.job_id for c in plan.pending)


def test_a_failed_chunk_is_enqueued_again_until_its_runs_are_spent(redis_conn):
    chunk = plan_rollouts(_with_missing(_data(), [(1, 2, 1)]), "replay", "qs").pending
    for _ in range(rollout_jobs.ROLLOUT_MAX_RUNS):
        (job,) = ensure_chunks(redis_conn, chunk)
        Queue(defaults.ROLLOUT_QUEUE, connection=redis_conn).remove(job)
        job.set_status("failed")
    with pytest.raises(RolloutsStuck, match=rf"rollout chunk {chunk[0].job_id} ran 3 times and "
                                            r"its cells are still missing \(last state: failed\)"):
        ensure_chunks(redis_conn, chunk)


def test_waiting_submission_counts_as_pending_for_the_reconciler(redis_conn):
    (job,) = ensure_chunks(redis_conn, plan_rollouts(_with_missing(_data(), [(0, 0, 0)]),
                                                     "replay", "qs").pending)
    continuation = rollout_jobs.wait_for(redis_conn, "sub-1", job, "service.queues.jobs.audit_job",
                                         queue=defaults.AUDIT_QUEUE)
    assert continuation.get_status() == "deferred"
    assert rollout_jobs.waiting_job(redis_conn, "sub-1") == continuation.id
    from service.queues.jobs import _job_pending

    assert _job_pending(redis_conn, "audit-sub-1", "sub-1")
    rollout_jobs.stop_waiting(redis_conn, "sub-1")
    assert not _job_pending(redis_conn, "audit-sub-1", "sub-1")


# ------------------------------------------------------------------ runner


def test_journal_append_cuts_a_torn_last_line(tmp_path):
    journal = tmp_path / "cells" / "replay__qs.journal.jsonl"
    journal.parent.mkdir()
    journal.write_bytes(b'{"seed": 0}\n{"seed": 1, "succ')
    append_record(journal, {"seed": 2})
    assert [json.loads(line) for line in journal.read_text().splitlines()] == [{"seed": 0},
                                                                              {"seed": 2}]


def test_a_chunk_without_its_fields_is_refused_by_name():
    with pytest.raises(ChunkError, match=r"rollout chunk: field 'state_ids' is missing"):
        parse_chunk({"mechanism": "replay", "query_set": "stack-hidden", "experience_id": "x",
                     "seeds": [0]})


@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_a_chunk_naming_an_unknown_state_is_refused(tmp_path):
    copy_library(tmp_path, experience_ids(1))
    copy_query_set(tmp_path, "stack-hidden", ["stack-hidden-s00"])
    chunk = Chunk("replay", "stack-hidden", "stack-e000", ("stack-hidden-s07",), (0,))
    with pytest.raises(ChunkError, match=r"state_id 'stack-hidden-s07' is not in query set "
                                         r"'stack-hidden'"):
        chunk_world(tmp_path, chunk)


@pytest.mark.sim
@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_a_chunk_run_again_resumes_and_reexecution_reproduces_the_cell(tmp_path):
    root = tmp_path / "frozen"
    copy_library(root, experience_ids(1))
    copy_query_set(root, "stack-hidden", ["stack-hidden-s00"])
    context = RunnerContext(root, root / "cells")
    partial = Chunk("replay", "stack-hidden", "stack-e000", ("stack-hidden-s00",), (0,))
    whole = Chunk("replay", "stack-hidden", "stack-e000", ("stack-hidden-s00",), (0, 1))
    assert run_chunk(context, partial) == (1, 0)
    assert run_chunk(context, whole) == (1, 1)  # seed 0 is in the journal: resumed
    journal = root / "cells" / "replay__stack-hidden.journal.jsonl"
    first = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [r["seed"] for r in first] == [0, 1]
    assert {"state_hash", "final_hash", "code_version", "packages", "wall_s"} <= set(first[0])
    again = RunnerContext(tmp_path / "again", tmp_path / "again" / "cells")
    copy_library(again.root, experience_ids(1))
    copy_query_set(again.root, "stack-hidden", ["stack-hidden-s00"])
    again._sim = context.sim()
    run_chunk(again, partial)
    (rerun,) = [json.loads(line) for line in
                (again.root / "cells" / "replay__stack-hidden.journal.jsonl").read_text().splitlines()]
    assert (rerun["success"], rerun["final_hash"]) == (first[0]["success"], first[0]["final_hash"])


# --------------------------------------------- sealed setting filled on demand

QUOTA = 3


def _progress(seen: list):
    """Records each new rollout progress a status shows into `seen`."""
    def record(status: dict) -> None:
        if status["rollouts"] and (not seen or seen[-1] != status["rollouts"]):
            seen.append(status["rollouts"])
    return record


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.skipif(not real_data_available(), reason="frozen data not built")
def test_sealed_setting_is_filled_by_the_runner_once_for_concurrent_submissions(
        tmp_path, redis_server):
    root = tmp_path / "frozen"
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", HIDDEN_STATES)
    computed = StoreCells(LocalStore(tmp_path / "store"))  # the stack's store
    stack = ServiceStack(tmp_path, redis_server, tmp_path / "no-catalog",
                         extra_env={"EXPAUDIT_CATALOG": "", "EXPAUDIT_FROZEN_ROOT": str(root),
                                    "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": str(QUOTA)})
    runner = ProcessServer([sys.executable, "-m", "expaudit.cli.runner"], tmp_path / "runner.log",
                           env=stack.env(), cwd=REPO_ROOT)
    try:
        stack.start_web(workers=1)
        stack.start_worker()
        runner.start()
        token = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "sealed-lab", "owner": "sealed-lab"},
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        auth = {"Authorization": f"Bearer {token.json()['token']}"}

        def submit(seed: int) -> requests.Response:
            return requests.post(f"{stack.url}/api/v1/submissions", headers=auth,
                                 files={"file": ("s.csv", hidden_scores(root, seed), "text/csv")},
                                 data={"setting": HIDDEN, "public": "true"}, timeout=30)

        first, second = submit(1), submit(2)
        assert first.status_code == second.status_code == 202, (first.text, second.text)
        seen: list = []
        done = [wait_final(stack, auth, r.json()["id"], on_status=_progress(seen))
                for r in (first, second)]
        assert [d["state"] for d in done] == ["published", "published"], (done, stack.logs(),
                                                                         runner.log_tail())
        assert done[0]["rollouts"]["done"] == done[0]["rollouts"]["total"] == 10 * 1 * 5
        assert len(seen) >= 2 and seen[0]["done"] < seen[-1]["done"]  # progress moved
        assert {s["total"] for s in seen} == {50}
        assert 1 in {s["runners"] for s in seen}  # the runner may register after the first poll
        records = computed.stored("replay", "stack-hidden")
        keys = {(r["experience_id"], r["state_id"], r["seed"]) for r in records}
        assert len(records) == len(keys) == 50  # every cell once: the chunks were shared
        assert {r["code_version"] for r in records} and all(r["state_hash"] for r in records)

        third = submit(3)
        final = wait_final(stack, auth, third.json()["id"])
        assert final["state"] == "published" and final["rollouts"] is None
        assert len(computed.stored("replay", "stack-hidden")) == 50  # no rollout ran again

        refused = submit(4)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "sealed_quota"
        outcomes = requests.get(f"{stack.url}/api/v1/settings/{HIDDEN}/outcomes", timeout=10)
        assert outcomes.status_code == 403 and outcomes.json()["error"]["code"] == "sealed"
        report = requests.get(f"{stack.url}{final['report_urls'][HIDDEN]['json']}", headers=auth,
                              timeout=10).json()
        assert report["inputs"]["n_experiences"] == 10 and report["sealed"]
        assert set(report["reference"]) == {"success_rule", "success_random", "success_oracle",
                                            "advantage"}  # headline numbers only (docs/sealed.md)
        assert not {"outcomes", "outcome", "success", "quality", "ranking"} & report_keys(report)
    finally:
        runner.stop()
        stack.stop()
