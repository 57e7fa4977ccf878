"""What mutation testing of the metrics found unchecked in the discrimination label and the
noise block: the paper's bar at its edges and in its words, the label's own numbers, the
noise null's smallest resample count and refusals, a `headroom_cf` interval not computed,
and the `headroom_cf` interval alone over many blocks of resamples."""

from __future__ import annotations

import numpy as np
import pytest

from expaudit.errors import InvalidInput
from leaderboard.metrics.bootstrap import (Interval, bootstrap_intervals, cluster_index,
                                           headroom_cf_interval)
from leaderboard.metrics.discrimination import (RANDOM_RANGE, noise_shortfall, setting_label,
                                                shortfall)
from leaderboard.metrics.noise import noise_aware, oracle_cf_by_scene


@pytest.mark.parametrize("random,oracle,says", [
    (0.5, 0.6, None),  # oracle - random is 0.1 up to a rounding: the bar is met
    (RANDOM_RANGE[0], 0.5, None),  # random at either end of its range is in it
    (RANDOM_RANGE[1], 0.99, None),
    (0.5, 0.55, "oracle - random = 0.550 - 0.500 = 0.050 is below 0.10"),
    (0.9, 1.0, "random success 0.900 is above 0.85"),
    (0.2, 0.25, "oracle - random = 0.250 - 0.200 = 0.050 is below 0.10; "
                "random success 0.200 is below 0.30"),
])
def test_the_papers_bar_at_its_edges_and_in_its_words(random, oracle, says):
    assert shortfall(random, oracle) == says


def test_an_undefined_headroom_interval_misses_the_rule_in_its_words():
    assert noise_shortfall(0.5, None) == ("the interval of headroom_cf (cross-fitted oracle - "
                                          "random) is undefined")
    assert noise_shortfall(RANDOM_RANGE[0], 0.01) is None and noise_shortfall(RANDOM_RANGE[1], 0.01) is None


def _tensor(seed: int, p: float, shape=(3, 12, 5)) -> np.ndarray:
    return (np.random.default_rng(seed).random(shape) < p).astype(np.int8)


def test_a_setting_label_holds_its_own_random_oracle_and_both_reasons():
    outcomes = _tensor(0, 0.12)
    outcomes[0, :6, :] = 1  # one experience good on half the scenes: per-experience max differs
    states = np.repeat(np.arange(6), 2).astype(object)
    label = setting_label(outcomes, states, n_bootstrap=200, seed=3)
    y = outcomes.mean(axis=2)
    assert label.random == float(y.mean())
    assert label.oracle == float(y.max(axis=0).mean())
    assert label.oracle not in (float(y.max()), float(y.max(axis=1).mean()))
    assert label.reason == noise_shortfall(label.random, label.headroom_cf.low) is not None
    assert label.paper_reason == shortfall(label.random, label.oracle) is not None
    assert (label.discriminates, label.paper_discriminates) == (False, False)


def test_one_noise_resample_is_enough_to_ask_for():
    result = noise_aware(_tensor(1, 0.5), 1, np.random.default_rng(0))
    assert result.n_null == 1 and 0.0 <= result.null_p_value <= 1.0
    with pytest.raises(InvalidInput, match=r"^n_resamples must be a positive integer, got 0$"):
        noise_aware(_tensor(1, 0.5), 0, np.random.default_rng(0))


def test_the_noise_nulls_p95_is_the_95th_percentile_of_its_draws(monkeypatch):
    from leaderboard.metrics import noise

    draws = np.linspace(0.0, 1.0, 101)
    monkeypatch.setattr(noise, "noise_null", lambda outcomes, n, rng: draws)
    assert noise_aware(_tensor(2, 0.5), 101, np.random.default_rng(0)).null_p95 == pytest.approx(0.95)


def test_an_outcome_that_is_not_0_or_1_is_refused_in_its_words():
    outcomes = _tensor(1, 0.5)
    outcomes[0, 0, 0] = 2
    with pytest.raises(InvalidInput, match=r"^outcomes must be 0/1 in every cell \(a complete tensor\)$"):
        noise_aware(outcomes, 10, np.random.default_rng(0))


def test_without_the_cross_fitted_oracle_the_headroom_interval_says_so():
    y = _tensor(3, 0.5, (3, 8, 4)).mean(axis=2)
    result = bootstrap_intervals(y, np.zeros(8, dtype=int), np.repeat(np.arange(4), 2), np.full(8, 0.5),
                                 None, 20, np.random.default_rng(0))
    assert result.headroom_cf == Interval(None, None, "the cross-fitted oracle was not computed")


def test_the_headroom_interval_alone_equals_the_reports_over_many_blocks_of_resamples():
    """2000 clusters: the resamples are drawn in several blocks (`row_blocks`), each of its
    own rows, and the interval is the one `bootstrap_intervals` gives from the same stream."""
    outcomes = _tensor(4, 0.5, (3, 2000, 2))
    y = outcomes.mean(axis=2)
    states = np.arange(2000)
    per_scene = oracle_cf_by_scene(outcomes)
    alone = headroom_cf_interval(y, states, per_scene, 1200, np.random.default_rng(5))
    report = bootstrap_intervals(y, np.zeros(2000, dtype=int), states, np.full(2000, 0.5), None, 1200,
                                 np.random.default_rng(5), scene_oracle_cf=per_scene).headroom_cf
    assert alone.low is not None and (alone.low, alone.high) == pytest.approx((report.low, report.high))


def test_no_scenes_are_no_clusters():
    index, n_clusters = cluster_index(np.array([], dtype=object))
    assert (index.tolist(), n_clusters) == ([], 0)
    assert cluster_index(np.array(["b", "a", "b"]))[1] == 2


def test_a_subset_of_one_scene_has_one_undefined_shuffle_mean_per_scene():
    from leaderboard.metrics.gap import discrimination_gap

    result = discrimination_gap(np.array([[1.0], [0.0]]), np.array([0]), 50, np.random.default_rng(0))
    assert result.reason == "1 scene(s) in this subset: a shuffle needs at least 2"
    assert result.scene_shuffle_mean.shape == (1,) and np.isnan(result.scene_shuffle_mean).all()


def test_the_ranking_result_marks_the_scenes_its_within_query_auroc_reads():
    from leaderboard.metrics.ranking import ranking_metrics, scene_aurocs

    y = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])  # scene 1 all positive, scene 2 all negative
    scores = np.array([[0.9, 0.2, 0.5], [0.1, 0.4, 0.3]])
    result = ranking_metrics(y, scores)
    assert result.eligible.tolist() == scene_aurocs(y, scores)[1].tolist() == [True, False, False]
