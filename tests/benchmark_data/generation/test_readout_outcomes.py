"""The behavioural link's outcomes: run order, one journaled cell per (policy, initialization,
seed) with the matrix cells' provenance, resuming without recomputing, the consolidated table.

Real MuJoCo and a published Door policy from a real dev initialization; the episode horizon
is cut to a few control steps so the file runs in seconds (the stored outcome holds for any
horizon's bookkeeping).
"""

from __future__ import annotations

import pandas as pd
import pytest

from benchmark_data.generation import readout_outcomes as ro
from benchmark_data.policy_files import is_trained
from simulator.readout_inits import initialization

TASK = "door"
POLICY = ("policy_dr", "door-e000")
SHORT = {"stack": 8, "door": 8}


def _start(split: str, index: int) -> ro.ReadoutStart:
    init = initialization(TASK, split, index)
    return ro.ReadoutStart(init.init_id, split, init.layout)


def test_cells_run_seed_by_seed_each_initialization_by_every_policy_splits_interleaved():
    starts = [_start("dev", 0), _start("dev", 1), _start("eval", 0), _start("eval", 1), _start("eval", 2),
              _start("eval", 3)]
    policies = [("policy", "door-e000"), POLICY]
    cells = ro.ordered_cells(TASK, starts, policies, seeds=(0, 1))
    assert len(cells) == 2 * 6 * 2 and len({c.key for c in cells}) == len(cells)
    assert [c.seed for c in cells] == [0] * 12 + [1] * 12
    order = [c.state_id for c in cells[:12:2]]
    assert order == ["door-eval-i000", "door-dev-i000", "door-eval-i001", "door-eval-i002",
                     "door-dev-i001", "door-eval-i003"]
    assert [(c.mechanism, c.experience_id) for c in cells[:2]] == policies
    assert cells[1].query_set == "readout-door-eval" and cells[2].query_set == "readout-door-dev"


def test_a_split_the_policies_do_not_run_from_is_refused():
    with pytest.raises(ro.InvalidInput, match=r"split must be one of \('dev', 'eval'\), got \['confirm'\]"):
        ro.ordered_cells(TASK, [_start("confirm", 0)], [POLICY])


@pytest.mark.sim
@pytest.mark.skipif(not is_trained(*POLICY), reason="the published Door policy_dr/door-e000 is absent")
def test_one_outcome_is_journaled_once_and_a_rerun_recomputes_nothing(tmp_path, monkeypatch):
    import simulator.policy_rollout

    monkeypatch.setattr(simulator.policy_rollout, "HORIZON", SHORT)
    starts = [_start("dev", 0)]
    assert ro.run_outcomes(TASK, starts, root=tmp_path, seeds=[0], policies=[POLICY]) == 1
    journal = ro.journal_path(TASK, tmp_path)
    first = journal.read_text()
    assert ro.run_outcomes(TASK, starts, root=tmp_path, seeds=[0], policies=[POLICY]) == 0
    assert journal.read_text() == first and len(first.splitlines()) == 1

    table = ro.consolidate(TASK, starts, tmp_path)
    assert list(table.columns) == list(ro.OUTCOME_COLUMNS)
    row = table.iloc[0]
    assert (row.policy, row.initialization, row.split, row.seed) == ("policy_dr/door-e000", "door-dev-i000", "dev", 0)
    assert row.success in (True, False)
    assert row.code_version.startswith("policy/2+weights:")
    assert row.initial_coordinate == 0.0  # the bank's Door starts are closed (levels 0-1)
    assert 100.0 < row.target_gripper_distance_mm < 600.0
    assert pd.read_parquet(ro.table_path(TASK, tmp_path)).equals(table)


def test_consolidating_without_a_journal_is_refused(tmp_path):
    with pytest.raises(ro.OutcomesNotReady, match="no outcomes journaled yet"):
        ro.consolidate(TASK, [_start("dev", 0)], tmp_path, physics={})


def test_version_2_takes_version_1s_dev_outcomes_once_and_no_other(tmp_path):
    """`carry_over` copies the dev records of bank v1's journal into v2's, unchanged, and a
    second call adds nothing (the eval records are version 1's own initializations)."""
    from expaudit.journal import append_record, read_journal

    def record(split: str, index: int, seed: int) -> dict:
        return {"mechanism": "policy", "query_set": f"readout-door-{split}", "experience_id": "door-e000",
                "state_id": f"door-{split}-i{index:03d}", "seed": seed, "success": 1, "code_version": "c"}

    source = ro.journal_path(TASK, tmp_path, "v1")
    for rec in (record("dev", 0, 0), record("eval", 0, 0), record("dev", 1, 1)):
        append_record(source, rec)
    assert ro.carry_over(TASK, "v1", "v2", ("dev",), tmp_path) == 2
    assert read_journal(ro.journal_path(TASK, tmp_path, "v2")) == [record("dev", 0, 0), record("dev", 1, 1)]
    assert ro.carry_over(TASK, "v1", "v2", ("dev",), tmp_path) == 0
    assert len(read_journal(ro.journal_path(TASK, tmp_path, "v2"))) == 2
