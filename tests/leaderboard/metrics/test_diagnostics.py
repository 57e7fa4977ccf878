"""Re-ranking (CSLS, mutual proximity) and the label-using diagnostics."""

import itertools

import numpy as np
import pytest

from leaderboard.metrics.diagnostics import (
    advantage_on,
    delete_top_pick,
    equalized_library,
    equalized_subset,
    random_sublibraries,
    reranked,
)
from leaderboard.metrics.rerank import csls
from leaderboard.metrics.selection import oracle_tie_counts, select

Y = np.array([[1.0, 0.0, 0.6, 0.2], [0.0, 1.0, 0.6, 0.2], [0.4, 0.4, 0.0, 0.2]])
SCORES = np.array([[3.0, 2.0, 1.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0]])


def test_delete_top_pick_hand_computed():
    result = delete_top_pick(Y, SCORES, top_pick=0)
    # remaining e1, e2: selection e1, e1, e1, e2 -> S = 0.45; random 0.35; oracle 0.55
    assert result.value == pytest.approx(0.5)
    assert result.experiences == (1, 2)


def test_delete_top_pick_needs_two_experiences():
    result = delete_top_pick(np.ones((1, 3)), np.ones((1, 3)), 0)
    assert result.value is None
    assert result.reason == "the library has one experience: nothing is left after deletion"


def test_advantage_on_reduced_library_uses_its_own_references():
    result = advantage_on(Y, SCORES, np.array([2]))
    assert result.value is None
    assert "oracle - random = 0.0000 is below 0.05" in result.reason


def test_equalized_subset_exhaustive_picks_smallest_range_first_in_order():
    quality = np.array([0.1, 0.5, 0.52, 0.9, 0.51, 0.3])
    assert equalized_subset(quality, 3) == (1, 2, 4)
    assert equalized_subset(np.array([0.0, 1.0, 0.0, 1.0]), 2) == (0, 2)


def test_equalized_subset_sliding_window_is_optimal_for_large_libraries():
    quality = np.random.default_rng(0).random(12)
    chosen = equalized_subset(quality, 5)
    best = min(np.ptp(quality[list(c)]) for c in itertools.combinations(range(12), 5))
    assert len(chosen) == 5
    assert np.ptp(quality[list(chosen)]) == pytest.approx(best)


def test_equalized_library_of_small_library_is_the_library():
    result = equalized_library(Y, SCORES, Y.mean(axis=1))
    assert result.experiences == (0, 1, 2)
    assert result.value == pytest.approx(4 / 19)
    assert result.quality_range == pytest.approx(0.2)


def test_random_sublibraries_not_applicable_below_k50():
    result = random_sublibraries(Y, SCORES, np.random.default_rng(0))
    assert result.share_exceeding_oracle is None
    assert result.reason == (
        "not applicable: the library has K = 3 experiences; random K = 10 sub-libraries "
        "are drawn from libraries of K >= 50"
    )


def test_random_sublibraries_match_a_loop():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 6, (50, 30)) / 5
    scores = rng.normal(size=(50, 30))
    scores[7] += 1.0  # a hub
    result = random_sublibraries(y, scores, np.random.default_rng(4), n_draws=40)
    draws = np.sort(np.argsort(np.random.default_rng(4).random((40, 50)), axis=1)[:, :10], axis=1)
    exceed, ratios = [], []
    for draw in draws:
        picks = select(scores[draw])
        rule_share = np.bincount(picks, minlength=10).max() / 30
        oracle_share = oracle_tie_counts(y[draw]).max() / 30
        exceed.append(rule_share > oracle_share)
        ratios.append(rule_share / oracle_share)
    assert result.share_exceeding_oracle == pytest.approx(np.mean(exceed))
    assert result.mean_concentration_ratio == pytest.approx(np.mean(ratios))
    assert result.n_draws == 40 and result.size == 10


def test_constant_rule_concentrates_in_every_sublibrary():
    y = np.random.default_rng(5).random((50, 40))
    result = random_sublibraries(y, np.zeros((50, 40)), np.random.default_rng(0))
    assert result.share_exceeding_oracle == 1.0


def test_reranked_reports_both_corrections():
    result = reranked(Y, SCORES)
    assert set(result) == {"csls", "mutual_proximity"}
    assert result["csls"].value == pytest.approx(advantage_on(Y, csls(SCORES)).value)
