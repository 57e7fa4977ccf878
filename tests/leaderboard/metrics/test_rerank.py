"""CSLS and mutual-proximity re-ranking against hand-computed cases."""

import numpy as np

from leaderboard.metrics.rerank import csls, mutual_proximity
from leaderboard.metrics.selection import select

S = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 1.0]])


def test_csls_hand_computed():
    np.testing.assert_allclose(csls(S, k=1), [[-5, -1, 0], [0, -6, -5]])
    np.testing.assert_allclose(csls(S, k=2), [[-3, 0.5, 1.5], [3, -3.5, -2.5]])
    np.testing.assert_allclose(csls(S, k=10), csls(S, k=3))  # clipped to the matrix size


def test_csls_penalises_a_hub():
    scores = np.array([[0.9, 0.9, 0.9, 0.9], [0.8, 0.1, 0.1, 0.1], [0.1, 0.85, 0.1, 0.1]])
    assert select(scores).tolist() == [0, 0, 0, 0]
    assert select(csls(scores, k=4)).tolist()[:2] == [1, 2]


def test_mutual_proximity_hand_computed():
    np.testing.assert_allclose(
        mutual_proximity(S),
        [[1 / 24, 0.375, 0.625], [0.625, 1 / 24, 0.125]],
    )


def test_csls_of_scores_near_the_float_limit_is_finite_and_ranks_as_scaled_scores():
    rng = np.random.default_rng(4)
    scores = rng.uniform(-1.0, 1.0, (5, 7))
    huge = scores * 1.7e308  # finite scores an upload may hold; 2 s overflows
    assert np.isfinite(huge).all()
    adjusted = csls(huge)
    assert np.isfinite(adjusted).all()
    np.testing.assert_array_equal(select(adjusted), select(csls(scores)))
