"""Selection (argmax, lowest-index ties), success, advantage and the oracle tie split."""

import numpy as np
import pytest

from leaderboard.metrics.selection import advantage, oracle_tie_counts, select, success
from tests.support.hand_case import SCORES, Y  # three experiences, four scenes, worked by hand below


def test_select_breaks_ties_to_lowest_index():
    assert select(SCORES).tolist() == [0, 0, 0, 2]
    assert select(np.zeros((4, 3))).tolist() == [0, 0, 0]


def test_success_is_mean_of_selected_outcomes():
    assert success(Y, np.array([0, 0, 0, 2])) == pytest.approx((1 + 0 + 0.6 + 0.2) / 4)


def test_advantage_is_null_below_the_fixed_denominator():
    value, reason = advantage(0.5, 0.48, 0.52)
    assert value is None
    assert reason is not None
    assert "oracle - random = 0.0400 is below 0.05" in reason
    value, reason = advantage(0.5, 0.4, 0.45)  # exactly 0.05 is allowed
    assert value == pytest.approx(2.0)
    assert reason is None


def test_oracle_counts_split_ties_evenly():
    np.testing.assert_allclose(oracle_tie_counts(Y), [1 + 0.5 + 1 / 3, 1 + 0.5 + 1 / 3, 1 / 3])
    assert oracle_tie_counts(Y).sum() == pytest.approx(Y.shape[1])
