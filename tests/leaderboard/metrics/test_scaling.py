"""Lab-scale audits: the rank-based within-query AUROC and the chunked metrics give the old numbers.

`tensor_scene_aurocs` (benchmarks/lab_reference.py) is the previous
within-query AUROC (a (Q, K, K) comparison tensor), the reference the
rank-based one must reproduce exactly. Block sizes are forced tiny (`chunking.CHUNK_ELEMENTS`)
so that the paths a K = 1,000 x 2,000-scene matrix takes are exercised on
small matrices, and compared with a single block.
"""

import tracemalloc

import numpy as np
import pytest

from benchmark_data.frozen import load_transfer
from benchmark_data.registry import SETTINGS
from benchmarks.lab_reference import random_lab_setting, tensor_scene_aurocs
from leaderboard.audit import run_audit
from leaderboard.metrics import chunking
from leaderboard.metrics.bootstrap import bootstrap_intervals
from leaderboard.metrics.diagnostics import random_sublibraries
from leaderboard.metrics.gap import discrimination_gap
from leaderboard.metrics.ranking import scene_aurocs
from leaderboard.metrics.rerank import mutual_proximity
from leaderboard.rules.simple import SCORED_RULES

PUBLIC_SETTINGS = [s.id for s in SETTINGS.values() if not s.sealed]


def _searchsorted_mutual_proximity(scores):
    """The previous mid-rank CDFs: one sort and two binary searches per row."""

    def cdf_rows(matrix):
        out = np.empty(matrix.shape)
        for row, values in enumerate(matrix):
            ordered = np.sort(values)
            below = np.searchsorted(ordered, values, side="left")
            at_or_below = np.searchsorted(ordered, values, side="right")
            out[row] = (below + at_or_below) / (2.0 * len(values))
        return out

    return cdf_rows(scores) * cdf_rows(scores.T).T


def _random_case(rng):
    """Outcomes with every label kind and scores with many ties, -0.0 next to 0.0."""
    k, q = int(rng.integers(1, 25)), int(rng.integers(1, 30))
    y = rng.integers(0, 6, (k, q)) / 5
    if rng.random() < 0.5:
        scores = rng.integers(-2, 3, (k, q)).astype(float)
        scores[scores == 0] = rng.choice([0.0, -0.0], int((scores == 0).sum()))
    else:
        scores = rng.normal(size=(k, q))
    return y, scores


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of at most 7 elements: every metric walks many blocks, rows never split."""
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 7)


def lab_setting(k, n_states, seed=0):
    """Random lab matrix: 5 draws per state, 5 seeds, quality and difficulty structure."""
    data, p, rng = random_lab_setting(k, n_states, seed)
    return data, np.round(rng.normal(size=p.shape) + 2 * p)


@pytest.mark.parametrize("budget", [1, 3, 64, 1 << 20])
def test_rank_auroc_equals_tensor_auroc_exactly(monkeypatch, budget):
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", budget)
    rng = np.random.default_rng(budget)
    for _ in range(150):
        y, scores = _random_case(rng)
        expected, expected_eligible = tensor_scene_aurocs(y, scores)
        auroc, eligible = scene_aurocs(y, scores)
        assert eligible.tolist() == expected_eligible.tolist()
        np.testing.assert_array_equal(auroc, expected)


def test_rank_auroc_all_tied_and_single_candidate():
    y = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    auroc, eligible = scene_aurocs(y, np.zeros((3, 2)))
    assert eligible.tolist() == [True, True] and auroc.tolist() == [0.5, 0.5]
    auroc, eligible = scene_aurocs(np.ones((1, 4)), np.zeros((1, 4)))
    assert not eligible.any() and np.isnan(auroc).all()


@pytest.mark.parametrize("setting_id", PUBLIC_SETTINGS)
def test_rank_auroc_equals_tensor_auroc_on_the_benchmark_settings(setting_id):
    data = load_transfer(setting_id)
    y = data.success_matrix()
    rng = np.random.default_rng(len(setting_id))
    score_sets = [SCORED_RULES[name].scores(data) for name in ("oracle", "track_record")]
    score_sets += [rng.normal(size=y.shape), rng.integers(0, 3, y.shape).astype(float)]
    for scores in score_sets:
        expected, _ = tensor_scene_aurocs(y, scores)
        np.testing.assert_array_equal(scene_aurocs(y, scores)[0], expected)


def test_mutual_proximity_equals_searchsorted_cdfs(tiny_blocks):
    rng = np.random.default_rng(3)
    for _ in range(60):
        _, scores = _random_case(rng)
        np.testing.assert_array_equal(mutual_proximity(scores), _searchsorted_mutual_proximity(scores))


def test_within_query_auroc_memory_is_linear_in_k_times_q():
    """K = 400 x 60 scenes: the old tensor alone was 60 x 400 x 400 x 8 B = 77 MB."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 6, (400, 60)) / 5
    scores = rng.normal(size=(400, 60))
    tracemalloc.start()
    try:
        scene_aurocs(y, scores)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * y.size * 8  # a few (K, Q) arrays, far below Q K^2


def test_gap_draws_the_same_shuffles_in_blocks(tiny_blocks, monkeypatch):
    data, scores = lab_setting(12, 9)
    y, sel = data.success_matrix(), np.argmax(scores, axis=0)
    blocked = discrimination_gap(y, sel, 300, np.random.default_rng(5))
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    whole = discrimination_gap(y, sel, 300, np.random.default_rng(5))
    assert (blocked.gap, blocked.envelope_low, blocked.envelope_high) == (
        whole.gap, whole.envelope_low, whole.envelope_high)
    np.testing.assert_allclose(blocked.scene_shuffle_mean, whole.scene_shuffle_mean, rtol=0, atol=1e-12)


def test_bootstrap_draws_the_same_resamples_in_blocks(tiny_blocks, monkeypatch):
    data, scores = lab_setting(12, 9)
    y, sel = data.success_matrix(), np.argmax(scores, axis=0)
    auroc, _ = scene_aurocs(y, scores)
    args = (y, sel, data.scenes.state_ids, y.mean(axis=0), auroc, 300)
    blocked = bootstrap_intervals(*args, np.random.default_rng(2))
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    whole = bootstrap_intervals(*args, np.random.default_rng(2))
    for name in ("success_rule", "advantage", "success_best_fixed", "gap", "within_query_auroc"):
        a, b = getattr(blocked, name), getattr(whole, name)
        assert (a.low, a.high, a.n_undefined) == pytest.approx((b.low, b.high, b.n_undefined), abs=1e-12), name


def test_random_sublibraries_in_blocks(tiny_blocks, monkeypatch):
    data, scores = lab_setting(55, 4)
    y = data.success_matrix()
    blocked = random_sublibraries(y, scores, np.random.default_rng(8))
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    assert blocked == random_sublibraries(y, scores, np.random.default_rng(8))


def test_full_report_is_the_same_with_tiny_blocks(tiny_blocks, monkeypatch):
    """K = 60 (every diagnostic applies) x 40 scenes: the JSON report does not depend on blocks."""
    data, scores = lab_setting(60, 8, seed=4)
    blocked = run_audit(data, scores, n_shuffles=400, n_bootstrap=400, seed=3).to_dict()
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    assert blocked == run_audit(data, scores, n_shuffles=400, n_bootstrap=400, seed=3).to_dict()


def test_success_matrix_is_the_float_mean_over_seeds():
    data, _ = lab_setting(7, 3)
    np.testing.assert_array_equal(data.success_matrix(), data.outcomes.astype(np.float64).mean(axis=2))


def test_row_blocks_cover_every_row_once(monkeypatch):
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 10)
    assert list(chunking.row_blocks(7, 3)) == [slice(0, 3), slice(3, 6), slice(6, 7)]
    assert list(chunking.row_blocks(2, 50)) == [slice(0, 1), slice(1, 2)]
    assert list(chunking.row_blocks(0, 5)) == []
