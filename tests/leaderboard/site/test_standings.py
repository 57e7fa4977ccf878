"""Where a row stands: discrimination, reference lines, CI-aware ranks and the two marks."""

from __future__ import annotations

import pytest

from leaderboard.site.standings import (RANK_BY_ADVANTAGE, RANK_BY_SUCCESS, Estimate, discrimination,
                                   rank_metric, rank_rows, reference_lines, standing)


def report(a=None, low=None, high=None, success=0.5, best=0.6, oracle=0.9, random=0.3,
           gap=0.02, significant=False, direction=None) -> dict:
    return {"reference": {"advantage": a, "success_rule": success, "success_best_fixed": best,
                          "success_oracle": oracle, "success_random": random,
                          "best_fixed": "e1", "best_fixed_advantage": 0.5},
            "intervals": {"advantage": {"low": low, "high": high},
                          "success_best_fixed": {"low": 0.55, "high": 0.65}},
            "gap": {"all": {"gap": gap, "gap_significant": significant,
                            "direction": direction}}}


def test_rank_is_one_plus_rows_wholly_above():
    rows = [standing("a", report(0.8, 0.7, 0.9)), standing("b", report(0.75, 0.6, 0.85)),
            standing("c", report(0.3, 0.2, 0.4)), standing("d", report(0.1, 0.05, 0.15)),
            standing("e", report(None))]
    ranked = rank_rows(rows, RANK_BY_ADVANTAGE)
    assert [(r.row_id, r.rank) for r in ranked] == [("a", 1), ("b", 1), ("c", 3), ("d", 4),
                                                   ("e", None)]


def test_a_row_without_an_interval_counts_as_its_point():
    rows = [standing("a", report(0.8, 0.7, 0.9)), standing("p", report(0.5))]
    assert [r.rank for r in rank_rows(rows, RANK_BY_ADVANTAGE)] == [1, 2]


@pytest.mark.parametrize(("success", "significant", "direction", "beats", "shuffle", "matters"), [
    (0.7, True, "above", True, True, True),
    (0.7, False, None, True, False, False),
    (0.5, True, "above", False, True, False),
    (0.7, True, "below", True, False, False),
])
def test_marks(success, significant, direction, beats, shuffle, matters):
    row = standing("x", report(0.5, success=success, significant=significant,
                               direction=direction))
    assert (row.beats_best_fixed, row.beats_shuffle, row.matters) == (beats, shuffle, matters)
    assert row.best_fixed_distance == pytest.approx(success - 0.6)


def test_marks_are_unknown_without_numbers():
    row = standing("x", {"reference": {"advantage": 0.2}})
    assert row.beats_best_fixed is None and row.beats_shuffle is None and not row.matters


def test_discrimination_threshold_and_reason():
    met = discrimination([report(oracle=0.9, random=0.3)])
    assert (met.discriminates, met.advantage_defined) == (True, True)
    assert "0.900 - 0.300 = 0.600 (at least 0.10) and random success 0.300 within 0.30-0.85" in met.reason
    flat = discrimination([{"verdict": {}}, report(oracle=0.33, random=0.3)])
    assert flat.discriminates is False and flat.oracle_minus_random == pytest.approx(0.03)
    assert flat.advantage_defined is False
    assert "0.330 - 0.300 = 0.030 is below 0.10" in flat.reason and "below 0.05 A is undefined" in flat.reason
    assert rank_metric(flat) == RANK_BY_SUCCESS
    unknown = discrimination([{"reference": {"success_rule": 0.4}}])
    assert unknown.discriminates is None and rank_metric(unknown) == RANK_BY_ADVANTAGE


def test_a_setting_whose_random_pick_almost_always_fails_does_not_discriminate_but_keeps_a():
    """Door Policy before the regeneration: oracle - random 0.12, random success 0.18."""
    low = discrimination([report(oracle=0.30, random=0.18)])
    assert (low.discriminates, low.advantage_defined) == (False, True)
    assert low.reason == "random success 0.180 is below 0.30"
    assert rank_metric(low) == RANK_BY_ADVANTAGE
    high = discrimination([report(oracle=0.97, random=0.88)])
    assert high.discriminates is False and "random success 0.880 is above 0.85" in high.reason
    assert "0.090 is below 0.10" in high.reason and high.advantage_defined is True


def test_reference_lines_come_from_the_reports_and_link_to_published_rows():
    lines = reference_lines([report()], {"oracle": ("baseline-oracle-s", {})})
    assert [(l.rule, l.advantage) for l in lines] == [("random", 0.0), ("best_fixed", 0.5),
                                                     ("oracle", 1.0)]
    assert lines[1].success == Estimate(0.6, 0.55, 0.65) and lines[1].experience == "e1"
    assert [l.submission_id for l in lines] == [None, None, "baseline-oracle-s"]
    assert reference_lines([{"reference": {"success_rule": 0.4}}], {}) == []
