"""Natural frames of the published policies' rollouts, at small scale (the same code as the
full run, the horizon shortened): the rollout is the outcome cell's own, frames are the bank's
cameras at every 10th step and the final state, and a run resumes unit by unit."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark_data.generation import readout_policy_frames as pf
from benchmark_data.generation.readout_outcomes import bank_starts, ordered_cells, task_policies
from benchmark_data.policy_files import policy_dirs
from simulator import policy_rollout
from simulator.policy_executor import PolicyScene, PolicyWorld, execute_policy, load_actor, make_camera
from simulator.provenance import policy_code_version
from simulator.readout_cells import Observer
from simulator.readout_inits import initializations, make_sim, start

pytestmark = [pytest.mark.sim, pytest.mark.slow]

TASK = "stack"
HORIZON = 23
"""Short enough for a test, long enough for frames 0, 10, 20 and the final state."""


@pytest.fixture(scope="module")
def policy():
    policies = task_policies(TASK)
    if not policies:
        pytest.skip("the published Stack policies are not in the frozen data")
    mechanism, eid = policies[0]
    return mechanism, eid, policy_dirs(TASK, None)[(mechanism, eid)]


def test_a_rollout_is_the_outcome_cells_own_and_keeps_the_banks_frames(policy, monkeypatch, tmp_path):
    mechanism, eid, directory = policy
    init = initializations(TASK, "dev")[0]
    sim = make_sim(TASK)
    observer = Observer(sim, TASK)
    actor, size = load_actor(str(directory))
    camera = make_camera(sim, TASK, size)
    try:
        start(sim, init)
        first_state, first_images = sim.state_hash(), observer.render()
        first_coordinate = observer.target.coordinate()
        rollout = pf.rollout_frames(observer, camera, actor, init, f"{mechanism}/{eid}", eid,
                                    policy_code_version(directory), horizon=HORIZON)
    finally:
        camera.close()
        observer.close()
    # the outcome cell of the same policy, initialization and seed, run by the matrix's executor
    monkeypatch.setitem(policy_rollout.HORIZON, TASK, HORIZON)
    start_ = next(s for s in bank_starts(TASK, ("dev",)) if s.initialization == init.init_id)
    world = PolicyWorld(TASK, {init.init_id: PolicyScene(init.init_id, init.init_id, 0, start_.layout)},
                        {(mechanism, eid): str(directory)})
    cell = next(c for c in ordered_cells(TASK, [start_], [(mechanism, eid)], (pf.SEED,)))
    [result] = list(execute_policy([cell], world, lambda c: tmp_path / "journal.jsonl", workers=1))
    assert (rollout.final_hash, int(rollout.success)) == (result.final_hash, result.success)

    rows = rollout.rows
    steps = int(rows["steps"].iloc[0])
    expected = [t for t in range(0, steps, 10)] + [steps]
    assert rows["frame"].tolist() == expected
    assert rows["state_hash"].iloc[0] == first_state
    assert np.array_equal(rollout.agent[0], first_images[0]) and np.array_equal(rollout.wrist[0], first_images[1])
    assert rows["state_hash"].iloc[-1] == rollout.final_hash
    assert rollout.agent.shape == (len(rows), 64, 64, 3) == rollout.wrist.shape
    assert set(rows["code_version"]) == {f"{pf.FRAMES_VERSION}+{policy_code_version(directory)}"}
    assert (rows["source"] == f"{mechanism}/{eid}").all() and (rows["split"] == "dev").all()
    assert rows["coordinate"].iloc[0] == first_coordinate  # cube A's x in mm at the start


def test_a_run_resumes_unit_by_unit_and_remakes_a_torn_one(policy, tmp_path):
    work = tmp_path / "frames"
    assert pf.run_frames(TASK, splits=("dev",), work=work, limit=2, horizon=HORIZON) == 2
    tables = sorted(work.glob("dev/*.parquet"))
    assert len(tables) == 2 and all(t.with_suffix(".npz").is_file() for t in tables)
    kept = {t.name: t.stat().st_mtime_ns for t in tables}
    assert pf.run_frames(TASK, splits=("dev",), work=work, limit=1, horizon=HORIZON) == 1
    assert {t.name: t.stat().st_mtime_ns for t in tables} == kept  # nothing made twice
    torn = tables[0]
    torn.unlink()  # the images written, the table never: made again
    assert pf.run_frames(TASK, splits=("dev",), work=work, limit=1, horizon=HORIZON) == 1
    assert torn.is_file()
    rows, agent, wrist = pf.read_units(work)
    assert len(rows) == len(agent) == len(wrist) and rows["image"].tolist() == list(range(len(rows)))
    assert rows.groupby(["initialization", "source"]).ngroups == 3
    first = initializations(TASK, "dev")[0].init_id
    n_policies = len(policy_dirs(TASK, None))
    assert (rows["initialization"] == first).sum() > 0 and rows["source"].nunique() == min(3, n_policies)


def test_eval_initializations_and_unknown_splits_are_refused(tmp_path):
    with pytest.raises(pf.InvalidInput, match="splits: must be among"):
        pf.run_frames(TASK, splits=("eval",), work=tmp_path)
