"""Pooled and within-query AUROC, eligibility and r2_scene against hand-computed cases."""

import itertools

import numpy as np
import pytest

from leaderboard.metrics.ranking import (
    labels,
    mann_whitney_auroc,
    pooled_auroc,
    r2_scene,
    ranking_metrics,
    scene_aurocs,
)

Y = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 1.0]])
SCORES = np.array([[0.9, 0.3], [0.1, 0.3], [0.5, 0.1]])


def _pairwise(pos, neg):
    return np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg)])


def test_labels_use_inclusive_thresholds():
    y = np.array([[0.8, 0.2, 0.5, 4 / 5, 1 / 5, 0.79]])
    pos, neg = labels(y)
    assert pos.tolist() == [[True, False, False, True, False, False]]
    assert neg.tolist() == [[False, True, False, False, True, False]]


def test_within_query_auroc_hand_computed():
    per_scene, eligible = scene_aurocs(Y, SCORES)
    # scene 0: pos e0 (0.9) > neg e1 (0.1) -> 1; e2 (y=0.5) excluded
    # scene 1: pos e1 (0.3) ties neg e0 (0.3) -> 1/2, pos e2 (0.1) < 0.3 -> 0
    np.testing.assert_allclose(per_scene, [1.0, 0.25])
    assert eligible.tolist() == [True, True]
    result = ranking_metrics(Y, SCORES)
    assert result.within_query_auroc == pytest.approx(0.625)
    assert result.within_query_eligible_share == 1.0


def test_pooled_auroc_hand_computed():
    # positives 0.9, 0.3, 0.1; negatives 0.1, 0.3 -> (1 + 1 + 1 + 0.5 + 0.5 + 0) / 6
    value, reason = pooled_auroc(Y, SCORES)
    assert value == pytest.approx(4 / 6)
    assert reason is None


def test_mann_whitney_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 5, 30).astype(float)
    neg = rng.integers(0, 5, 25).astype(float)
    assert mann_whitney_auroc(pos, neg) == pytest.approx(_pairwise(pos, neg))


def test_scene_aurocs_match_pairwise_loop_and_skip_ineligible_scenes():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 6, (7, 15)) / 5
    y[:, 3] = 1.0  # no negative: not eligible
    scores = rng.integers(0, 3, (7, 15)).astype(float)
    per_scene, eligible = scene_aurocs(y, scores)
    pos, neg = labels(y)
    for q in range(15):
        if pos[:, q].any() and neg[:, q].any():
            assert per_scene[q] == pytest.approx(_pairwise(scores[pos[:, q], q], scores[neg[:, q], q]))
        else:
            assert not eligible[q] and np.isnan(per_scene[q])
    assert not eligible[3]
    result = ranking_metrics(y, scores)
    assert result.within_query_eligible_share == pytest.approx(eligible.mean())
    assert result.within_query_auroc == pytest.approx(np.nanmean(per_scene))


def test_auroc_null_with_reason_when_no_labels_of_one_kind():
    y = np.full((3, 4), 0.5)
    result = ranking_metrics(y, np.zeros((3, 4)))
    assert result.pooled_auroc is None
    assert result.pooled_reason == "0 positive and 0 negative pairs: AUROC needs at least one of each"
    assert result.within_query_auroc is None
    assert result.within_query_reason == (
        "no scene has both a positive (y >= 0.8) and a negative (y <= 0.2) candidate"
    )
    assert result.within_query_eligible_share == 0.0


def test_r2_scene_hand_computed():
    # total SS 29/24, residual within scenes 28/24
    value, reason = r2_scene(Y)
    assert value == pytest.approx(1 / 29)
    assert reason is None


def test_r2_scene_is_one_when_scenes_explain_everything_and_null_without_variance():
    y = np.array([[1.0, 0.0, 0.4], [1.0, 0.0, 0.4]])
    assert r2_scene(y)[0] == pytest.approx(1.0)
    value, reason = r2_scene(np.ones((2, 3)))
    assert value is None
    assert reason == "all pairs have the same success: there is no variance to explain"


def test_perfect_scores_rank_perfectly():
    y = np.random.default_rng(4).integers(0, 2, (6, 20)).astype(float)
    result = ranking_metrics(y, y + 0.0)
    assert result.pooled_auroc == 1.0
    assert result.within_query_auroc == 1.0
