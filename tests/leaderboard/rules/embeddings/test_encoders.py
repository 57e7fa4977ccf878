"""Embedding encoders: determinism, the cache, scoring and the typed "not computed" result."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from leaderboard.rules.embeddings import (ENCODER_NAMES, EmbeddingCache, NotComputed, cosine_scores,
                                    embed_cached, embedding_scores, image_hash, load_encoder,
                                    nearest_neighbour_scores, raw_l2_scores)
from leaderboard.rules.embeddings.raw32 import Raw32Encoder


def _images(n: int, size: int = 40, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8) for _ in range(n)]


def _loaded(name: str):
    encoder = load_encoder(name)
    if isinstance(encoder, NotComputed):
        pytest.skip(f"{name}: {encoder.message} (install with scripts/bootstrap.sh embed)")
    return encoder


def test_core_import_does_not_import_torch():
    code = ("import sys, leaderboard.rules.embeddings as e; e.load_encoder('raw32'); "
            "e.load_encoder('policy_encoder'); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_raw32_vectors_are_resized_pixels_and_identical_across_runs():
    images = _images(3)
    first = Raw32Encoder().embed(images)
    second = Raw32Encoder().embed(images)
    assert first.dtype == np.float32 and first.shape == (3, 32 * 32 * 3)
    assert np.array_equal(first, second)
    assert first.min() >= 0 and first.max() <= 255 and np.array_equal(first, np.round(first))
    assert Raw32Encoder().content_hash == Raw32Encoder().content_hash


@pytest.mark.parametrize("name", ["mobilenet_v2", "efficientnet_lite0"])
def test_imagenet_encoder_is_deterministic_and_cosine(name, tmp_path):
    encoder = _loaded(name)
    images = _images(2, size=24)
    first = encoder.embed(images)
    again = load_encoder(name).embed(images)
    assert first.dtype == np.float32 and first.shape == (2, 1280)
    assert np.array_equal(first, again)
    assert encoder.metric == "cosine" and encoder.content_hash.startswith("sha256:")
    cache = EmbeddingCache(tmp_path)
    cached, stats = embed_cached(encoder, images, cache)
    assert stats.misses == 2 and np.array_equal(cached, first)
    cached, stats = embed_cached(encoder, images, cache)
    assert stats.hits == 2 and np.array_equal(cached, first)
    scores = embedding_scores(encoder, images, images[:1], cache)
    assert scores.shape == (1, 2) and scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert scores[0, 1] < scores[0, 0]


@pytest.mark.parametrize("name", ["resnet18", "dinov2", "clip"])
def test_user_weight_encoder_without_weights_is_not_computed(name):
    result = load_encoder(name, environ={})
    assert isinstance(result, NotComputed)
    assert result.message.startswith("not computed: weights missing")
    assert f"EXPAUDIT_{name.upper()}_WEIGHTS" in result.reason


def test_weights_path_that_is_not_a_file_is_named(tmp_path):
    missing = tmp_path / "nowhere.pth"
    result = load_encoder("resnet18", weights_path=missing)
    assert isinstance(result, NotComputed) and str(missing) in result.reason
    from_env = load_encoder("clip", environ={"EXPAUDIT_CLIP_WEIGHTS": str(missing)})
    assert isinstance(from_env, NotComputed) and "EXPAUDIT_CLIP_WEIGHTS" in from_env.reason


def test_policy_encoder_is_not_computed_until_policies_exist():
    result = load_encoder("policy_encoder")
    assert isinstance(result, NotComputed)
    assert "weights missing" in result.message and "Policy+DR" in result.reason


def test_resnet18_rejects_a_state_dict_of_another_model(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "wrong.pth"
    torch.save({"conv.weight": torch.zeros(1)}, path)
    with pytest.raises(ValueError, match=r"wrong\.pth: not a torchvision-layout resnet18 state dict"):
        load_encoder("resnet18", weights_path=path)


def test_resnet18_loads_a_torchvision_layout_state_dict(tmp_path):
    """The loader path, checked with the architecture's own freshly initialised state dict."""
    torch = pytest.importorskip("torch")
    from leaderboard.rules.embeddings.architectures import ResNet18

    path = tmp_path / "resnet18.pth"
    torch.manual_seed(0)
    torch.save(ResNet18().state_dict(), path)
    encoder = load_encoder("resnet18", environ={"EXPAUDIT_RESNET18_WEIGHTS": str(path)})
    vectors = encoder.embed(_images(2, size=16))
    assert vectors.shape == (2, 512) and np.isfinite(vectors).all()


def test_unknown_encoder_name_is_rejected():
    with pytest.raises(ValueError, match="encoder name must be one of .* got 'vgg'"):
        load_encoder("vgg")
    assert ENCODER_NAMES[0] == "raw32"


def test_bad_image_is_named_by_index():
    with pytest.raises(ValueError, match=r"images\[1\]: expected an \(H, W, 3\) uint8 array"):
        Raw32Encoder().embed([_images(1)[0], np.zeros((4, 4), dtype=np.uint8)])


def test_cosine_scores_orientation_and_values():
    base = np.array([[1.0, 0.0], [0.0, 2.0]])
    query = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    scores = cosine_scores(query, base)
    assert scores.shape == (2, 3)
    np.testing.assert_allclose(scores, [[1.0, 2 ** -0.5, 0.0], [0.0, 2 ** -0.5, 1.0]])


def test_cosine_scores_reject_zero_rows_and_width_mismatch():
    with pytest.raises(ValueError, match="base embedding row 1 is all zeros"):
        cosine_scores(np.ones((1, 2)), np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="embedding widths differ: query D=3, base D=2"):
        cosine_scores(np.ones((1, 3)), np.ones((1, 2)))
    with pytest.raises(ValueError, match="metric must be 'cosine' or 'l2', got 'dot'"):
        nearest_neighbour_scores("dot", np.ones((1, 2)), np.ones((1, 2)))


def test_raw_l2_scores_are_minus_distance_in_unit_pixels():
    base = np.array([[0.0, 0.0], [255.0, 0.0]])
    query = np.array([[0.0, 0.0], [255.0, 255.0]])
    np.testing.assert_allclose(raw_l2_scores(query, base), [[0.0, -np.sqrt(2)], [-1.0, -1.0]])


def test_cache_keys_by_pixels_and_model(tmp_path):
    images = _images(2)
    assert image_hash(images[0]) == image_hash(images[0].copy())
    assert image_hash(images[0]) != image_hash(images[1])
    cache = EmbeddingCache(tmp_path)
    encoder = Raw32Encoder()
    first, stats = embed_cached(encoder, images + [images[0]], cache)
    assert (stats.hits, stats.misses) == (0, 3)
    second, stats = embed_cached(encoder, images, cache)
    assert (stats.hits, stats.misses) == (2, 0) and np.array_equal(second, first[:2])
    files = list(tmp_path.rglob("*.npy"))
    assert len(files) == 2 and all(encoder.content_hash.split(":")[1] in str(f) for f in files)
