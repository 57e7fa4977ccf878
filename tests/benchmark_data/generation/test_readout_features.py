"""Reference representations' features on a tiny readout bank: shapes, determinism, resuming,
"not computed" with a reason, and the engine reading the stored shards.

The tiny bank is two image shards of seeded random 64x64 images beside the published
policies (linked from the frozen data); what is checked holds for any images.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmark_data.generation import readout_features as rf
from tests.support.readout_images import POLICY, TASK, image_bank, images, needs_policies, tiny_bank


@pytest.fixture
def tiny(tmp_path):
    return tiny_bank(tmp_path / "a")


@needs_policies
@pytest.mark.parametrize("name", rf.representation_names(TASK))
def test_every_reference_representation_has_its_declared_shape_and_dtype(tiny, name):
    record = rf.write_features(TASK, name, root=tiny)
    ids, features = rf.read_features(TASK, name, tiny)
    width = {"raw32": 3072, "mobilenet_v2": 1280, "efficientnet_lite0": 1280}.get(name, 128)
    assert record["status"] == rf.COMPUTED and record["complete"] and record["rows"] == 8
    assert list(ids) == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(3)]
    assert features.shape == (8, width) and record["dimension"] == width
    assert np.isfinite(features).all()
    with np.load(rf.features_dir(TASK, name, tiny) / "features-00.npz") as stored:
        assert stored["features"].dtype == np.dtype(record["dtype"])
    assert record["content_hash"].startswith("sha256:") and record["code_version"] == rf.CODE_VERSION


@needs_policies
@pytest.mark.parametrize("name", [POLICY, "raw32"])
def test_a_vector_depends_on_its_image_only(tmp_path, tiny, name):
    """Same images in other shards, other neighbours and another order: the same vectors, bit for bit."""
    agent, wrist = images(1, 5), images(2, 5)
    other = image_bank(tmp_path / "b", {
        "images-00.npz": (["x", "a3", "a0"], np.stack([images(9, 1)[0], agent[3], agent[0]]),
                          np.stack([images(8, 1)[0], wrist[3], wrist[0]])),
    })
    rf.write_features(TASK, name, root=tiny)
    rf.write_features(TASK, name, root=other)
    ids_a, a = rf.read_features(TASK, name, tiny)
    ids_b, b = rf.read_features(TASK, name, other)
    assert np.array_equal(b[1], a[3]) and np.array_equal(b[2], a[0])
    assert not np.array_equal(b[0], a[0])


@needs_policies
def test_a_rerun_skips_stored_shards_and_recomputes_a_changed_one(tiny):
    rf.write_features(TASK, POLICY, root=tiny)
    out = rf.features_dir(TASK, POLICY, tiny)
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("features-*.npz")}
    bank = rf.bank_dir(TASK, tiny)
    np.savez_compressed(bank / "images-01.npz", observation_id=np.array(["c0", "c1"]),
                        agentview=images(5, 2), wrist=images(6, 2))
    record = rf.write_features(TASK, POLICY, root=tiny)
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("features-*.npz")}
    assert after["features-00.npz"] == before["features-00.npz"]
    assert after["features-01.npz"] != before["features-01.npz"]
    assert record["rows"] == 7
    assert list(rf.read_features(TASK, POLICY, tiny)[0][-2:]) == ["c0", "c1"]


def test_an_encoder_without_weights_is_not_computed_with_the_reason(tiny, tmp_path):
    missing = tmp_path / "absent.pth"
    record = rf.write_features(TASK, "mobilenet_v2", root=tiny,
                               environ={"EXPAUDIT_MOBILENET_V2_WEIGHTS": str(missing)})
    assert record["status"] == rf.NOT_COMPUTED
    assert record["reason"].startswith("weights missing") and str(missing) in record["reason"]
    assert not list(rf.features_dir(TASK, "mobilenet_v2", tiny).glob("features-*.npz"))
    with pytest.raises(rf.FeaturesNotComputed, match="not computed: weights missing"):
        rf.read_features(TASK, "mobilenet_v2", tiny)


def test_a_policy_absent_from_the_data_is_not_computed_with_the_reason(tmp_path):
    root = image_bank(tmp_path, {"images-00.npz": (["a0"], images(1, 1), images(2, 1))}, policies=False)
    record = rf.write_features(TASK, POLICY, root=root)
    assert record["status"] == rf.NOT_COMPUTED
    assert record["reason"] == (f"weights missing: policies/{POLICY} is not in the frozen data "
                                f"(needs weights.pt, spec.json, training.json)")


def test_a_bank_without_images_and_an_unknown_representation_are_refused(tmp_path):
    with pytest.raises(rf.FeaturesNotComputed, match="no image shards"):
        rf.write_features(TASK, "raw32", root=tmp_path)
    with pytest.raises(rf.InvalidInput, match="representation must be one of .* got 'dino'"):
        rf.load_representation(TASK, "dino")


@needs_policies
def test_the_engine_reads_the_stored_shards_as_written(tiny):
    from leaderboard.readout import read_features as engine_read

    rf.write_features(TASK, "raw32", root=tiny)
    rep = engine_read(rf.features_dir(TASK, "raw32", tiny), "raw32")
    ids, features = rf.read_features(TASK, "raw32", tiny)
    assert list(rep.ids) == list(ids) and np.array_equal(rep.values, features)


@needs_policies
def test_rows_precomputed_on_other_files_are_read_back_not_recomputed(tmp_path, tiny):
    """A chunk holding some of the bank's rows is embedded ahead; the bank pass takes those rows
    from the cache (here tampered, to see them) and computes only the rest."""
    agent, wrist = images(1, 5), images(2, 5)
    chunk = tmp_path / "train-00.npz"
    np.savez(chunk, observation_id=np.array(["a1", "a4"]), agentview=agent[[1, 4]], wrist=wrist[[1, 4]])
    cache = tmp_path / "cache"
    assert rf.precompute(TASK, POLICY, [chunk], cache, root=tiny) == 1
    assert rf.precompute(TASK, POLICY, [chunk], cache, root=tiny) == 0
    (stored,) = list(cache.glob("*/*/*/*.npz"))
    with np.load(stored) as data:
        cached = dict(data)
    np.savez(stored, **{**cached, "features": cached["features"] * 2})

    rf.write_features(TASK, POLICY, root=tiny, cache=cache)
    ids, features = rf.read_features(TASK, POLICY, tiny)
    fresh = image_bank(tmp_path / "fresh", {"images-00.npz": ([f"a{i}" for i in range(5)], agent, wrist)})
    rf.write_features(TASK, POLICY, root=fresh)
    _, plain = rf.read_features(TASK, POLICY, fresh)
    assert np.array_equal(cached["features"], plain[[1, 4]])
    assert np.array_equal(features[[1, 4]], 2 * plain[[1, 4]])
    assert np.array_equal(features[[0, 2, 3]], plain[[0, 2, 3]])
