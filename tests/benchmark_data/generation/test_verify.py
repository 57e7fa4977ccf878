"""Verification of stored policy cells: re-executed from scratch, every difference reported by field.

A tiny frozen root (two physical states of `stack-orig`, all their renders,
and the K=3 Stack library) gets a freshly initialised tiny `policy` of
`stack-e000`, frozen with its files as `expaudit data train-policies` writes
them, and four of its cells (two scenes, two seeds) run through
`PolicyExecutor` into the cells journal. What is checked (a faithful store
verifies clean; a tampered outcome, a changed published state hash or
replaced weights are each named) holds for any weights, so the policy is
not trained, and the episode horizon is cut to a few control steps so the
file runs in seconds.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from benchmark_data.paths import cells_journal, query_set_dir
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids, real_data_available

EXPERIENCE = "stack-e000"
QUERY_SET = "stack-orig"
STATES = ["stack-orig-s00", "stack-orig-s01"]
SCENES = ("stack-orig-s00-d1", "stack-orig-s01-d3")
SEEDS = (0, 1)
SHORT = {"stack": 8, "door": 8}

pytestmark = [pytest.mark.sim,
              pytest.mark.skipif(not real_data_available(), reason="frozen data not built")]


def _freeze_policy(root, seed: int) -> str:
    """Write a tiny seeded `policy` of EXPERIENCE with its three frozen files; returns its directory."""
    from benchmark_data.policy_files import policy_dir
    from tests.support.policy_training import freeze, untrained_policy

    return freeze(untrained_policy(seed=seed), policy_dir("policy", EXPERIENCE, root),
                  {"task": "stack", "mechanism": "policy", "experience_id": EXPERIENCE, "n_demos": 0,
                   "curve": []})


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    """A tiny frozen root whose `policy__stack-orig` journal holds four cells run by PolicyExecutor."""
    pytest.importorskip("robosuite")
    torch = pytest.importorskip("torch")
    pytest.importorskip("robomimic")
    import simulator.policy_rollout
    from benchmark_data.generation.rollouts import build_policy_world
    from simulator.executor import Cell
    from simulator.policy_executor import PolicyExecutor

    root = tmp_path_factory.mktemp("frozen")
    copy_library(root, experience_ids(3))
    copy_query_set(root, QUERY_SET, STATES)
    _freeze_policy(root, seed=0)
    cells = [Cell("policy", QUERY_SET, EXPERIENCE, scene, seed) for scene in SCENES for seed in SEEDS]
    threads = torch.get_num_threads()
    executor = PolicyExecutor(build_policy_world(cells, root))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(simulator.policy_rollout, "HORIZON", SHORT)
            torch.set_num_threads(1)  # as the CPU runner's workers execute cells
            results = executor.run(cells)
    finally:
        executor.close()
        torch.set_num_threads(threads)
    journal = cells_journal("policy", QUERY_SET, root)
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("".join(json.dumps(r.to_record(), sort_keys=True) + "\n" for r in results))
    return root


@pytest.fixture
def root(frozen, tmp_path, monkeypatch):
    """A private copy of the frozen root (tests tamper with it), with short episodes."""
    import simulator.policy_rollout

    monkeypatch.setattr(simulator.policy_rollout, "HORIZON", SHORT)
    copy = tmp_path / "frozen"
    shutil.copytree(frozen, copy)
    return copy


def _records(root) -> list[dict]:
    return [json.loads(line) for line in cells_journal("policy", QUERY_SET, root).read_text().splitlines()]


def _key(record: dict) -> tuple:
    return tuple(record[k] for k in ("mechanism", "query_set", "experience_id", "state_id", "seed"))


def test_faithfully_stored_policy_cells_verify_clean(root):
    from benchmark_data.generation.verify import verify_policy_sample

    report = verify_policy_sample(len(SCENES) * len(SEEDS), root=root)
    assert report.n_checked == 4
    assert report.mismatches == ()
    assert report.ok


def test_a_tampered_success_is_named_by_cell_and_field(root):
    from benchmark_data.generation.verify import verify_policy_sample

    records = _records(root)
    tampered = records[2]
    tampered["success"] = 1 - tampered["success"]
    cells_journal("policy", QUERY_SET, root).write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    report = verify_policy_sample(4, root=root)
    assert report.n_checked == 4
    (mismatch,) = report.mismatches
    assert mismatch.key == _key(tampered)
    assert mismatch.field == "success"
    assert (mismatch.stored, mismatch.rerun) == (tampered["success"], 1 - tampered["success"])
    assert mismatch.draw == int(tampered["state_id"][-1])  # the scene's appearance draw


def test_a_stored_state_hash_off_the_published_one_is_reported(root):
    from benchmark_data.generation.verify import verify_policy_sample

    path = query_set_dir(QUERY_SET, root) / "scenes.parquet"
    scenes = pd.read_parquet(path)
    scenes.loc[scenes["state_id"] == STATES[0], "state_hash"] = "0" * 64
    scenes.to_parquet(path, index=False)
    report = verify_policy_sample(4, root=root)
    assert {m.field for m in report.mismatches} == {"published state_hash"}
    assert sorted(m.key for m in report.mismatches) == sorted(
        ("policy", QUERY_SET, EXPERIENCE, SCENES[0], seed) for seed in SEEDS)


def test_replaced_weights_are_code_version_differences_not_reruns(root):
    from benchmark_data.generation.verify import verify_policy_sample
    from simulator.provenance import policy_code_version

    stored = {r["code_version"] for r in _records(root)}
    directory = _freeze_policy(root, seed=1)
    now = policy_code_version(directory)
    assert stored != {now}
    report = verify_policy_sample(4, root=root)
    assert report.n_checked == 4
    assert [m.field for m in report.mismatches] == ["code_version"] * 4
    assert {(m.stored, m.rerun) for m in report.mismatches} == {(stored.pop(), now)}


def test_the_verify_command_checks_policy_cells_on_request(root, capsys):
    from expaudit.cli import main

    assert main(["data", "verify", "--sample", "0", "--policy-sample", "1", "--root", str(root)]) == 0
    assert "verified 1 policy cells from scratch: 0 difference(s)" in capsys.readouterr().out


def test_a_root_without_policy_cells_is_refused(tmp_path):
    from benchmark_data.generation.verify import verify_policy_sample

    with pytest.raises(ValueError, match="no stored policy cells to verify"):
        verify_policy_sample(3, root=tmp_path)


def test_a_report_counts_cells_not_fields_and_success_on_its_own():
    from benchmark_data.generation.verify import Mismatch, VerifyReport

    a = ("policy", "door-orig", "door-e000", "door-orig-s00-d1", 0)
    b = ("policy", "door-orig", "door-e001", "door-orig-s00-d1", 0)
    report = VerifyReport(5, (Mismatch(a, 1, "final_hash", "x", "y"), Mismatch(a, 1, "success", 1, 0),
                              Mismatch(b, 1, "final_hash", "u", "v")))
    assert not report.ok
    assert report.cells_differing() == 2 and report.cells_differing("success") == 1
    assert report.cells_differing("state_hash") == 0 and VerifyReport(5, ()).cells_differing() == 0


def test_cells_made_on_another_cpu_are_counted_and_named_by_the_command(root, capsys):
    """Their final states can legitimately differ here, so the command says how many there are."""
    from benchmark_data.generation.verify import verify_policy_sample
    from expaudit.cli import main
    from expaudit.numerics import cpu_model

    records = _records(root)
    assert {json.loads(r["packages"]).get("cpu") for r in records} == {cpu_model()}
    assert verify_policy_sample(4, root=root).made_elsewhere == 0
    for record in records[:3]:
        packages = json.loads(record["packages"])
        packages["cpu"] = "OtherVendor family 1 model 2 (elsewhere)"
        record["packages"] = json.dumps(packages, sort_keys=True)
    records[3]["packages"] = json.dumps({"numpy": "1.26.4"})  # made before the CPU was recorded
    cells_journal("policy", QUERY_SET, root).write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    report = verify_policy_sample(4, root=root)
    assert report.made_elsewhere == 4 and report.ok
    assert main(["data", "verify", "--sample", "0", "--policy-sample", "4", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"4 of the re-run cells record another CPU than this one ({cpu_model()}) or none" in out
