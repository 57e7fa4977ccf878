"""Selection, reference quantities and concentration against hand-computed cases."""

import numpy as np
import pytest

from leaderboard.concentration import concentration
from leaderboard.reference import reference_quantities
from leaderboard.selection import advantage, oracle_tie_counts, select, success

# Three experiences, four scenes (worked by hand in the comments below).
Y = np.array([
    [1.0, 0.0, 0.6, 0.2],
    [0.0, 1.0, 0.6, 0.2],
    [0.4, 0.4, 0.0, 0.2],
])
SCORES = np.array([
    [3.0, 2.0, 1.0, 0.0],
    [1.0, 2.0, 0.0, 0.0],  # scene 1: tie with e0 -> lowest index e0
    [0.0, 0.0, 0.0, 5.0],
])


def test_select_breaks_ties_to_lowest_index():
    assert select(SCORES).tolist() == [0, 0, 0, 2]
    assert select(np.zeros((4, 3))).tolist() == [0, 0, 0]


def test_success_is_mean_of_selected_outcomes():
    assert success(Y, np.array([0, 0, 0, 2])) == pytest.approx((1 + 0 + 0.6 + 0.2) / 4)


def test_reference_quantities_hand_computed():
    ref = reference_quantities(Y, select(SCORES))
    assert ref.success_rule == pytest.approx(0.45)
    assert ref.success_random == pytest.approx(4.6 / 12)
    assert ref.success_oracle == pytest.approx(0.7)
    assert ref.best_fixed == 0  # e0 and e1 tie at 0.45: lowest index
    assert ref.success_best_fixed == pytest.approx(0.45)
    assert ref.headroom == pytest.approx(0.25)
    assert ref.advantage == pytest.approx(4 / 19)  # (27/60 - 23/60) / (42/60 - 23/60)
    assert ref.advantage_reason is None
    assert ref.best_fixed_advantage == pytest.approx(4 / 19)
    np.testing.assert_allclose(ref.quality, [0.45, 0.45, 0.25])
    np.testing.assert_allclose(ref.margin, [1 / 15, 1 / 15, -2 / 15])


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
