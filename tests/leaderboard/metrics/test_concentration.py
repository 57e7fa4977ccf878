"""Concentration against the oracle's tie-split counts, hand-computed."""

import numpy as np
import pytest

from leaderboard.metrics.concentration import concentration
from leaderboard.metrics.reference import reference_quantities
from leaderboard.metrics.selection import select
from tests.support.hand_case import SCORES, Y  # three experiences, four scenes, worked by hand below


def test_concentration_hand_computed():
    ref = reference_quantities(Y, select(SCORES))
    conc = concentration(Y, select(SCORES), ref.margin, ref.advantage)
    assert conc.selection_counts.tolist() == [3, 0, 1]
    assert conc.top_pick == 0
    assert conc.top_pick_share == pytest.approx(0.75)
    assert conc.oracle_top_pick_share == pytest.approx((11 / 6) / 4)
    assert conc.concentration_ratio == pytest.approx(18 / 11)
    assert conc.top_pick_margin == pytest.approx(1 / 15)
    assert conc.sign_match is True


def test_sign_match_is_null_without_advantage_and_false_on_opposite_signs():
    margin = np.array([-0.1, 0.1])
    y = np.array([[0.0, 1.0], [1.0, 0.0]])
    sel = np.array([0, 0])
    assert concentration(y, sel, margin, None).sign_match is None
    assert concentration(y, sel, margin, 0.3).sign_match is False
    assert concentration(y, sel, margin, -0.3).sign_match is True


def test_top_pick_ties_go_to_lowest_index():
    y = np.ones((3, 4))
    conc = concentration(y, np.array([2, 1, 2, 1]), np.zeros(3), None)
    assert conc.top_pick == 1
    assert conc.top_pick_share == 0.5
