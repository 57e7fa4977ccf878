"""The sign tests and Holm's adjustment to the exact value: small hand-computed cases, the
edges of the counts and p-values, and the words of every refusal."""

import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.sign_tests import SignTest, difference, holm, holm_family, sign_test, sign_test_p


def test_a_single_difference_gives_one_half_or_one():
    assert sign_test_p(1, 0) == 0.5
    assert sign_test_p(0, 1) == 1.0
    assert sign_test_p(2, 1) == 0.5  # (3 + 1) / 8
    assert sign_test_p(3, 0) == 0.125


@pytest.mark.parametrize("counts", [(-1, 2), (2, -1)])
def test_a_negative_count_is_refused_by_name(counts):
    with pytest.raises(BadArgument, match=rf"counts: must be non-negative, got {counts[0]} and {counts[1]}"):
        sign_test_p(*counts)


def test_no_difference_at_all_is_refused_by_name():
    with pytest.raises(BadArgument, match="counts: no non-zero difference, the sign test is undefined"):
        sign_test_p(0, 0)


def test_a_sign_test_counts_each_kind_of_initialization():
    t = sign_test("d/r/gain_below_one", "gain[s] < 1", [0.3, -0.1, 0.0, None, 0.2, None])
    assert t == SignTest("d/r/gain_below_one", "gain[s] < 1", 2, 1, 1, 2, 0.5)
    assert t.to_dict() == {"test_id": "d/r/gain_below_one", "hypothesis": "gain[s] < 1", "n_positive": 2,
                           "n_negative": 1, "n_ties": 1, "n_not_estimable": 2, "p_value": 0.5,
                           "p_holm": None, "reason": None}


def test_only_ties_give_no_p_value_with_the_reason():
    t = sign_test("x", "h", [0.0, None, 0.0])
    assert (t.n_positive, t.n_negative, t.n_ties, t.n_not_estimable, t.p_value) == (0, 0, 2, 1, None)
    assert t.reason == "no initialization with a non-zero difference"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_difference_is_refused_by_test_id(bad):
    with pytest.raises(BadArgument, match="t1: a difference is NaN or infinite"):
        sign_test("t1", "h", [0.1, bad])


def test_difference_is_a_minus_b_and_a_tie_only_within_rounding():
    assert difference(3.0, 1.0) == 2.0
    assert difference(1.0, 3.0) == -2.0
    assert difference(1.0, None) is None and difference(None, 1.0) is None
    assert difference(1.0, 1.0 + 1e-13) == 0.0
    assert difference(1.0, 1.0 + 1e-6) == pytest.approx(-1e-6)
    assert difference(1e6, 1e6 + 1e-5) == 0.0  # relative to the larger magnitude


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.04 of m = 3: 0.03, 0.04, 0.04 (the running maximum)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # 2 x 0.6 is capped at 1
    assert holm([0.0, 0.5]) == [0.0, 0.5]  # p = 0 is a p-value
    assert holm([1.0]) == [1.0]
    assert holm([]) == []


@pytest.mark.parametrize("bad", [[-0.1], [1.1], [float("nan")], [[0.1, 0.2]]])
def test_holm_refuses_what_is_not_a_list_of_p_values(bad):
    with pytest.raises(BadArgument, match=r"^p_values: must be a list of numbers in \[0, 1\]$"):
        holm(bad)


def test_holm_family_adjusts_only_tests_with_a_p_value_and_refuses_twins():
    tests = [SignTest("a", "h", 3, 0, 0, 0, 0.125), SignTest("b", "h", 0, 0, 1, 0, None, "none"),
             SignTest("c", "h", 1, 0, 0, 0, 0.5)]
    adjusted = holm_family(tests)
    assert [t.p_holm for t in adjusted] == [0.25, None, 0.5]
    with pytest.raises(BadArgument, match="^tests: a test id appears twice in the family$"):
        holm_family(tests + [tests[0]])
