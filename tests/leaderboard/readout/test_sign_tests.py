"""Exact sign tests and Holm's adjustment against hand values."""

import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.metrics import InitializationMetrics, Value
from leaderboard.readout.sign_tests import holm, holm_family, primary_tests, sign_test, sign_test_p


def test_all_positive():
    assert sign_test_p(9, 0) == 0.5 ** 9 == 0.001953125
    assert sign_test_p(12, 0) == 0.5 ** 12


def test_hand_values():
    assert sign_test_p(7, 3) == pytest.approx(176 / 1024)  # (C(10,7)+C(10,8)+C(10,9)+C(10,10)) / 2^10
    assert sign_test_p(0, 4) == 1.0
    assert sign_test_p(1, 1) == 0.75


def test_ties_are_dropped_and_unknowns_left_out():
    test = sign_test("t", "h", [1.0, 2.0, 0.0, -1.0, None])
    assert (test.n_positive, test.n_negative, test.n_ties, test.n_not_estimable) == (2, 1, 1, 1)
    assert test.p_value == 0.5  # P(X >= 2), X ~ Bin(3, 1/2)
    empty = sign_test("t", "h", [0.0, None])
    assert empty.p_value is None and empty.reason == "no initialization with a non-zero difference"


def test_holm_hand_family():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4x, 3x, 2x, 1x = 0.02, 0.03, 0.06, 0.04 -> running max
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_holm_reproduces_the_papers_family():
    # eight primary tests, each 12 of 12 initializations in the hypothesised direction
    assert holm([0.5 ** 12] * 8) == [0.001953125] * 8


def _row(name, natural, controlled, gain):
    v = lambda x: Value(x, None if x is not None else "not estimable")  # noqa: E731
    return InitializationMetrics(name, v(natural), v(controlled), v(gain), v(None), v(None), v(None), (), False, 1, 1)


def test_primary_tests_directions_and_family():
    rows = [_row("a", 1.0, 2.0, 0.5), _row("b", 1.0, 3.0, 0.2), _row("c", 2.0, 1.0, 1.0), _row("d", 1.0, None, None)]
    gain, mae = primary_tests("door/r", rows)
    assert gain.test_id == "door/r/gain_below_one" and gain.hypothesis == "gain[s] < 1"
    assert (gain.n_positive, gain.n_negative, gain.n_ties, gain.n_not_estimable) == (2, 0, 1, 1)
    assert gain.p_value == 0.25
    assert (mae.n_positive, mae.n_negative, mae.n_not_estimable) == (2, 1, 1)
    assert mae.p_value == 0.5
    family = holm_family([gain, mae])
    assert [t.p_holm for t in family] == [0.5, 0.5]  # 2 x 0.25, then max(0.5, 1 x 0.5)


def test_family_skips_undefined_tests_and_refuses_repeated_ids():
    defined = sign_test("a", "h", [1.0, 1.0])
    undefined = sign_test("b", "h", [0.0])
    out = holm_family([defined, undefined])
    assert out[0].p_holm == 0.25 and out[1].p_holm is None
    with pytest.raises(BadArgument, match="appears twice"):
        holm_family([defined, defined])
    with pytest.raises(BadArgument, match="p_values"):
        holm([1.5])


def test_rounding_differences_are_ties():
    rows = [_row("a", 3e-16, 7e-16, 1.0 - 2e-16), _row("b", 1.0, 1.0 + 1e-12, 1.0 + 3e-16)]
    gain, mae = primary_tests("door/perfect", rows)
    assert (gain.n_ties, mae.n_ties) == (2, 2)
    assert gain.p_value is None and mae.p_value is None
