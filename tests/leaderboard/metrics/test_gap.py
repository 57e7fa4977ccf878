"""Frequency-matched shuffles: permutation matrix, gap, envelope and the subsets."""

import numpy as np
import pytest

from leaderboard.metrics.gap import discrimination_gap, permutation_matrix, subset_masks


def test_permutation_matrix_rows_are_permutations():
    perms = permutation_matrix(500, 7, np.random.default_rng(0))
    assert perms.shape == (500, 7)
    np.testing.assert_array_equal(np.sort(perms, axis=1), np.tile(np.arange(7), (500, 1)))
    # every position takes every value: the draw is not the identity
    assert len({tuple(row) for row in perms}) > 100


def test_shuffles_keep_selection_counts_and_match_a_loop():
    rng = np.random.default_rng(3)
    y = rng.random((4, 9))
    sel = np.array([0, 0, 1, 3, 3, 3, 2, 0, 1])
    result = discrimination_gap(y, sel, 300, np.random.default_rng(11))
    perms = permutation_matrix(300, 9, np.random.default_rng(11))
    loop = []
    for perm in perms:
        shuffled = sel[perm]
        assert np.bincount(shuffled, minlength=4).tolist() == np.bincount(sel, minlength=4).tolist()
        loop.append(np.mean([y[shuffled[q], q] for q in range(9)]))
    assert result.shuffle_mean == pytest.approx(np.mean(loop))
    assert result.gap == pytest.approx(y[sel, np.arange(9)].mean() - np.mean(loop))
    low, high = np.percentile(np.array(loop) - np.mean(loop), [2.5, 97.5])
    assert (result.envelope_low, result.envelope_high) == pytest.approx((low, high))
    np.testing.assert_allclose(
        result.scene_shuffle_mean, [np.mean([y[sel[p][q], q] for p in perms]) for q in range(9)]
    )


def test_three_scene_case_by_hand():
    # sel = [0, 1, 1]; arrangements [0,1,1] S=1, [1,0,1] S=1/3, [1,1,0] S=1/3 -> mean 5/9
    y = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    result = discrimination_gap(y, np.array([0, 1, 1]), 6000, np.random.default_rng(0))
    assert result.shuffle_mean == pytest.approx(5 / 9, abs=0.02)
    assert result.gap == pytest.approx(4 / 9, abs=0.02)
    assert result.envelope_low == pytest.approx(-2 / 9, abs=0.02)
    assert result.envelope_high == pytest.approx(4 / 9, abs=0.02)
    assert result.significant is False
    assert result.direction is None


def test_perfect_and_reversed_assignment_are_significant():
    y = np.zeros((2, 20))
    y[0, :10] = 1.0
    y[1, 10:] = 1.0
    right = np.array([0] * 10 + [1] * 10)
    above = discrimination_gap(y, right, 2000, np.random.default_rng(1))
    below = discrimination_gap(y, 1 - right, 2000, np.random.default_rng(1))
    assert above.direction == "above" and above.significant is True
    assert above.gap == pytest.approx(0.5, abs=0.03)
    assert below.direction == "below" and below.significant is True
    assert below.gap == pytest.approx(-0.5, abs=0.03)


def test_scene_blind_constant_rule_has_zero_gap_inside_envelope():
    y = np.random.default_rng(2).random((5, 30))
    result = discrimination_gap(y, np.full(30, 3), 200, np.random.default_rng(0))
    assert result.gap == pytest.approx(0.0, abs=1e-12)
    assert result.envelope_low <= 0.0 <= result.envelope_high
    assert result.significant is False


def test_scene_blind_random_rules_rarely_leave_the_envelope():
    """Selections drawn without looking at the scene: gap inside the envelope ~95% of the time."""
    rng = np.random.default_rng(5)
    y = (rng.random((6, 40)) < rng.random((6, 1))).astype(float)
    inside = 0
    for trial in range(40):
        sel = rng.integers(0, 6, 40)
        result = discrimination_gap(y, sel, 500, np.random.default_rng(trial))
        inside += result.envelope_low <= result.gap <= result.envelope_high
    assert inside >= 34


def test_gap_needs_two_scenes():
    result = discrimination_gap(np.ones((3, 1)), np.array([0]), 10, np.random.default_rng(0))
    assert result.gap is None and result.significant is None
    assert result.reason == "1 scene(s) in this subset: a shuffle needs at least 2"
    empty = discrimination_gap(np.ones((3, 0)), np.array([], dtype=int), 10, np.random.default_rng(0))
    assert empty.reason == "0 scene(s) in this subset: a shuffle needs at least 2"


def test_subset_masks_follow_the_spec():
    layout = np.array([0, 0, 1, 1, 3, 2])
    draws = np.array([0, 2, 0, 1, 0, 4])
    masks = subset_masks(layout, draws)
    assert masks["all"].all()
    assert masks["appearance"].tolist() == [True, True, False, False, False, False]
    assert masks["layout"].tolist() == [False, False, True, False, True, False]
