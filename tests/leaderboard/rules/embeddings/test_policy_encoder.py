"""policy_encoder: the Policy+DR visual encoder as an embedding rule, and its feature export.

Tiny untrained mechanism-2 policies (32x32 images, 16 features) saved into a
temporary frozen root stand in for the frozen Policy+DR policies; what is
checked (the definition, determinism, the dimension, "not computed" reasons,
the export) does not depend on the network's size or training.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("robomimic")
pytest.importorskip("mujoco")  # the two-camera policies' module loads their camera

from benchmark_data.policy_files import encoder_features_path, policy_dir  # noqa: E402
from leaderboard.rules.embeddings import NotComputed, embedding_scores, load_encoder  # noqa: E402
from leaderboard.rules.embeddings.policy_encoder import (  # noqa: E402
    FEATURES_COLUMN, PolicyEncoder, export_features, load_policy_encoder, main,
    task_experience_ids)
from tests.support.policy_training import TINY as TRAINING_TINY  # noqa: E402
from tests.support.policy_training import freeze, untrained_policy  # noqa: E402

TINY = replace(TRAINING_TINY, feature_dim=16, keypoints=8)
STACK = ("stack-e000", "stack-e001", "stack-e002")


def save_tiny(root, experience_id: str, seed: int, spec=TINY):
    """A freshly initialised tiny policy with the three frozen files of a trained one; returns it."""
    policy = untrained_policy(spec, seed)
    freeze(policy, policy_dir("policy_dr", experience_id, root), {"experience_id": experience_id})
    return policy


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("frozen")
    for seed, eid in enumerate(STACK):
        save_tiny(root, eid, seed)
    return root


def _images(n: int, size: int = 48, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8) for _ in range(n)]


def test_the_task_policies_are_the_three_policy_dr_experiences():
    assert task_experience_ids("stack") == STACK
    assert task_experience_ids("door") == ("door-e000", "door-e001", "door-e002")
    with pytest.raises(ValueError, match="task must be one of .* got 'push'"):
        task_experience_ids("push")


def test_vectors_are_identical_across_loads_and_have_three_times_feature_dim(root):
    images = _images(3)
    first = load_encoder("policy_encoder", task="stack", root=root)
    second = load_encoder("policy_encoder", task="stack", root=root)
    assert isinstance(first, PolicyEncoder) and first.metric == "cosine"
    a, b = first.embed(images), second.embed(images)
    assert a.dtype == np.float32 and a.shape == (3, 3 * TINY.feature_dim) == (3, first.dimension)
    assert np.array_equal(a, b) and np.array_equal(a, first.embed(images))
    assert first.content_hash == second.content_hash and first.content_hash.startswith("sha256:")
    assert first.embed([]).shape == (0, 3 * TINY.feature_dim)
    scores = embedding_scores(first, images, images[:1])
    assert scores.shape == (1, 3) and scores[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_vector_is_each_policys_agent_view_core_on_the_resized_image(root):
    """The definition: concatenated agent-view VisualCore features, e000 first, of the resized
    image, as the policy's own episodes encode a frame (`simulator.policy_recipe.encode`)."""
    from PIL import Image

    from simulator.policy_recipe import RecipePolicy, encode

    image = _images(1, size=64, seed=3)[0]
    small = np.asarray(Image.fromarray(image).resize((TINY.image_size,) * 2, Image.BILINEAR))
    parts = [encode(RecipePolicy.load(policy_dir("policy_dr", eid, root)).encoders["agentview"], small[None].copy())
             for eid in STACK]
    expected = np.concatenate(parts, axis=1)[0]
    got = load_encoder("policy_encoder", task="stack", root=root).embed([image])[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    f = TINY.feature_dim
    assert not np.allclose(got[:f], got[f:2 * f])  # three different policies, in order


def test_content_hash_covers_every_weights_file(root, tmp_path):
    other = tmp_path / "frozen"
    shutil.copytree(root, other)
    save_tiny(other, "stack-e002", seed=7)
    before = load_policy_encoder("stack", root)
    after = load_policy_encoder("stack", other)
    assert before.content_hash != after.content_hash
    image = _images(1)
    f2 = 2 * TINY.feature_dim
    assert np.array_equal(before.embed(image)[:, :f2], after.embed(image)[:, :f2])
    assert not np.array_equal(before.embed(image)[:, f2:], after.embed(image)[:, f2:])


def test_a_missing_policy_is_not_computed_and_named(root, tmp_path):
    partial = tmp_path / "frozen"
    shutil.copytree(root, partial)
    (policy_dir("policy_dr", "stack-e001", partial) / "training.json").unlink()
    result = load_encoder("policy_encoder", task="stack", root=partial)
    assert isinstance(result, NotComputed) and result.name == "policy_encoder"
    assert result.message.startswith("not computed: weights missing: the Policy+DR image policies")
    assert "policies/policy_dr/stack-e001" in result.reason
    assert "stack-e000" not in result.reason and "stack-e002" not in result.reason
    door = load_encoder("policy_encoder", task="door", root=root)
    assert isinstance(door, NotComputed)
    assert all(f"policies/policy_dr/door-e00{i}" in door.reason for i in range(3))


def test_without_a_task_the_rule_is_not_computed_and_imports_no_torch(root):
    result = load_encoder("policy_encoder", root=root)
    assert isinstance(result, NotComputed) and "without a task" in result.reason
    code = ("import sys, leaderboard.rules.embeddings as e; "
            f"r = e.load_encoder('policy_encoder', task='door', root={str(root)!r}); "
            "assert isinstance(r, e.NotComputed), r; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def _write_tar(path, images: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for name, image in images.items():
            data = _png(image)
            info = tarfile.TarInfo(f"{name}.png")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def images_root(root, tmp_path_factory):
    """The tiny policies plus two scenes per Stack query set and three base scenes."""
    out = tmp_path_factory.mktemp("with-images") / "frozen"
    shutil.copytree(root, out)
    pictures = iter(_images(9, size=40, seed=5))
    for query_set in ("stack-orig", "stack-fresh", "stack-hidden"):
        ids = [f"{query_set}-s{i}" for i in range(2)]
        folder = out / "query_sets" / query_set
        folder.mkdir(parents=True)
        pd.DataFrame({"scene_id": ids}).to_parquet(folder / "scenes.parquet")
        _write_tar(folder / "images.tar", {sid: next(pictures) for sid in ids})
    folder = out / "libraries" / "stack-stream"
    folder.mkdir(parents=True)
    pd.DataFrame({"experience_id": list(STACK)}).to_parquet(folder / "experiences.parquet")
    _write_tar(folder / "base_images.tar", {eid: next(pictures) for eid in STACK})
    return out


def test_export_writes_every_query_and_base_image_deterministically(images_root, tmp_path):
    import pyarrow.parquet as pq

    path = export_features("stack", images_root)
    assert path == encoder_features_path("stack", images_root)
    assert path.relative_to(images_root).as_posix() == "policies/policy_dr/encoder_features_stack.parquet"
    frame = pd.read_parquet(path)
    assert list(frame.columns) == ["kind", "query_set", "scene_id", "experience_id", FEATURES_COLUMN]
    assert list(frame.kind) == ["query"] * 6 + ["base"] * 3
    assert list(frame.query_set[:6]) == ["stack-orig"] * 2 + ["stack-fresh"] * 2 + ["stack-hidden"] * 2
    assert list(frame.experience_id[6:]) == list(STACK) and frame.scene_id[6:].isna().all()
    assert pq.read_schema(path).field(FEATURES_COLUMN).type.value_type == "float"
    vectors = np.stack(frame[FEATURES_COLUMN].to_list())
    assert vectors.shape == (9, 3 * TINY.feature_dim)
    encoder = load_policy_encoder("stack", images_root)
    base_tar = images_root / "libraries" / "stack-stream" / "base_images.tar"
    from benchmark_data.image_archive import read_tar_images

    assert np.array_equal(vectors[6:], encoder.embed(read_tar_images(base_tar, STACK)))
    metadata = pq.read_schema(path).metadata
    assert metadata[b"content_hash"].decode() == encoder.content_hash
    again = export_features("stack", images_root, out=tmp_path / "again.parquet")
    assert pq.read_table(again).equals(pq.read_table(path))


def test_export_reads_the_policies_of_another_root_and_the_images_of_its_own(images_root, tmp_path):
    """A staging root's new policies, exported before they replace the published ones."""
    from benchmark_data.image_archive import read_tar_images

    staging = tmp_path / "staging"
    for i, eid in enumerate(STACK):
        save_tiny(staging, eid, seed=100 + i)
    out = export_features("stack", images_root, tmp_path / "staged.parquet", policies_root=staging)
    staged = np.stack(pd.read_parquet(out)[FEATURES_COLUMN].to_list())
    published = np.stack(pd.read_parquet(export_features("stack", images_root, tmp_path / "pub.parquet"))
                         [FEATURES_COLUMN].to_list())
    encoder = load_policy_encoder("stack", staging)
    query_tar = images_root / "query_sets" / "stack-orig" / "images.tar"
    assert np.array_equal(staged[:2], encoder.embed(read_tar_images(query_tar, ["stack-orig-s0", "stack-orig-s1"])))
    assert staged.shape == published.shape and not np.allclose(staged, published)


def test_export_entry_point_reports_a_missing_task(images_root, capsys):
    assert main(["--export", "--task", "stack", "--root", str(images_root)]) == 0
    assert main(["--export", "--task", "door", "--root", str(images_root)]) == 2
    err = capsys.readouterr().err
    assert "door: not computed: weights missing" in err and "policies/policy_dr/door-e000" in err


def test_a_cropped_policy_contributes_its_agent_view_encoder_on_the_centre_crop(tmp_path):
    """The agent-view VisualCore on the resized image's centre crop of a cropped policy, as
    its episodes read it (`simulator.policy_recipe.RecipeActor`)."""
    from PIL import Image

    from simulator.policy_recipe import centre_crop, encode

    spec = replace(TINY, crop_size=28)
    policies = [save_tiny(tmp_path, eid, seed, spec) for seed, eid in enumerate(STACK)]
    image = _images(1, size=64, seed=5)[0]
    small = np.asarray(Image.fromarray(image).resize((32, 32), Image.BILINEAR))
    expected = np.concatenate([encode(p.encoders["agentview"], centre_crop(small[None], 28)) for p in policies],
                              axis=1)[0]
    encoder = load_encoder("policy_encoder", task="stack", root=tmp_path)
    assert encoder.dimension == 3 * 16
    np.testing.assert_allclose(encoder.embed([image])[0], expected, rtol=0, atol=1e-6)


def test_a_policy_of_the_retired_mechanism_is_refused_by_name(root, tmp_path):
    """A spec.json that names no mechanism is version 1's, whose network is gone: the encoder
    names the file rather than reading its weights as a two-camera policy."""
    from expaudit.errors import InvalidInput

    old = tmp_path / "frozen"
    shutil.copytree(root, old)
    spec = policy_dir("policy_dr", "stack-e001", old) / "spec.json"
    spec.write_text('{"image_size": 32}\n')
    with pytest.raises(InvalidInput, match=r"stack-e001/spec.json: policy_mechanism 1 was retired"):
        load_policy_encoder("stack", old)
