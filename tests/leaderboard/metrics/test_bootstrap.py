"""Cluster bootstrap over states: counts, re-weighting and a loop cross-check.

The loop reference draws its own resamples (C states with replacement, as
multiplicities) and aggregates each resampled scene list itself; it uses
nothing of the module under test but the function it checks.
"""

import numpy as np
import pytest

from leaderboard.metrics import defaults
from leaderboard.metrics.bootstrap import (
    Interval,
    bootstrap_intervals,
    cluster_index,
    cluster_sums,
    percentile_interval,
    resample_counts,
)
from leaderboard.metrics.selection import select


def test_cluster_index_and_sums():
    index, n = cluster_index(np.array(["b", "a", "b", "c"], dtype=object))
    assert n == 3
    assert index.tolist() == [1, 0, 1, 2]
    sums = cluster_sums(index, n, np.array([1.0, 2.0, 3.0, 4.0]))
    assert sums.tolist() == [2.0, 4.0, 4.0]


def test_resample_counts_draw_c_clusters_per_row():
    counts = resample_counts(40, 500, np.random.default_rng(0))
    assert counts.shape == (500, 40)
    assert (counts.sum(axis=1) == 40).all()
    assert counts.mean() == pytest.approx(1.0, abs=0.02)


def test_percentile_interval_and_undefined_resamples():
    values = np.arange(1000, dtype=float)
    interval = percentile_interval(values, "x")
    assert interval == Interval(pytest.approx(24.975), pytest.approx(974.025), None, 0)
    values[:600] = np.nan
    undefined = percentile_interval(values, "advantage")
    assert undefined.low is None and undefined.n_undefined == 600
    assert undefined.reason == "advantage is undefined on 600 of 1000 resamples"


def _own_multiplicities(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """(B, C): how often each of C states is drawn when C states are drawn with replacement.

    Written here from the definition (each state equally likely, C draws per
    resample), as the multinomial of that draw from a generator of the given
    seed, so any other draw in `resample_counts` changes the intervals.
    """
    rng = np.random.default_rng(seed)
    equally_likely = [1.0 / n_clusters] * n_clusters
    return np.array([rng.multinomial(n_clusters, equally_likely) for _ in range(n_resamples)])


def test_bootstrap_matches_a_loop_over_resampled_states(audit_random_setting):
    data, scores = audit_random_setting
    y = data.success_matrix()
    sel = select(scores)
    shuffle_mean = np.full(y.shape[1], 0.4)
    scene_auroc = np.where(np.arange(y.shape[1]) % 4 == 0, np.nan, np.linspace(0.2, 0.9, y.shape[1]))
    result = bootstrap_intervals(
        y, sel, data.scenes.state_ids, shuffle_mean, scene_auroc, 300, np.random.default_rng(9)
    )
    states = sorted(set(data.scenes.state_ids.tolist()))
    state_of_scene = [states.index(s) for s in data.scenes.state_ids.tolist()]
    rule, best, gap, within, adv = [], [], [], [], []
    for w in _own_multiplicities(len(states), 300, seed=9):
        scenes = [q for q in range(y.shape[1]) for _ in range(w[state_of_scene[q]])]
        ys = y[:, scenes]
        chosen = ys[sel[scenes], np.arange(len(scenes))]
        rule.append(chosen.mean())
        best.append(ys.mean(axis=1).max())
        gap.append((chosen - shuffle_mean[scenes]).mean())
        within.append(np.nanmean(scene_auroc[scenes]))
        adv.append((chosen.mean() - ys.mean()) / (ys.max(axis=0).mean() - ys.mean()))
    for interval, values in (
        (result.success_rule, rule),
        (result.success_best_fixed, best),
        (result.gap, gap),
        (result.within_query_auroc, within),
        (result.advantage, adv),
    ):
        assert (interval.low, interval.high) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])))
    assert result.n_clusters == 12


def test_resample_counts_have_the_moments_of_drawing_states_with_replacement():
    """Each count is Binomial(C, 1/C): mean 1, variance 1 - 1/C, covariance -1/C between two states."""
    n_clusters, n_resamples = 8, 20000
    counts = resample_counts(n_clusters, n_resamples, np.random.default_rng(3)).astype(float)
    p = 1.0 / n_clusters
    variance = n_clusters * p * (1 - p)
    assert counts.mean(axis=0) == pytest.approx(np.ones(n_clusters), abs=5 * np.sqrt(variance / n_resamples))
    covariance = np.cov(counts, rowvar=False)
    # the sample (co)variances of 20,000 draws have a standard error of about 0.01 here
    assert np.diag(covariance) == pytest.approx(np.full(n_clusters, variance), abs=0.06)
    off_diagonal = covariance[~np.eye(n_clusters, dtype=bool)]
    assert off_diagonal == pytest.approx(np.full(off_diagonal.shape, -n_clusters * p * p), abs=0.06)


def test_an_interval_is_reported_when_exactly_the_minimum_share_of_resamples_defines_it():
    values = np.arange(1000, dtype=float)
    n_undefined = round(1000 * (1 - defaults.MIN_DEFINED_RESAMPLE_SHARE))
    values[:n_undefined] = np.nan
    at_minimum = percentile_interval(values, "x")
    assert at_minimum.low is not None and at_minimum.reason is None
    assert at_minimum.n_undefined == n_undefined
    values[n_undefined] = np.nan
    below = percentile_interval(values, "x")
    assert below.low is None and below.reason == f"x is undefined on {n_undefined + 1} of 1000 resamples"


def test_undefined_intervals_are_named_after_their_quantity():
    """Everyone succeeds everywhere: oracle - random is 0 and no scene is eligible for the AUROC."""
    y = np.ones((3, 8))
    result = bootstrap_intervals(
        y, np.zeros(8, dtype=int), np.repeat(np.arange(4), 2), np.full(8, 0.5), np.full(8, np.nan), 50,
        np.random.default_rng(0),
    )
    assert result.advantage == Interval(None, None, "advantage is undefined on 50 of 50 resamples", 50)
    assert result.within_query_auroc == Interval(
        None, None, "within_query_auroc is undefined on 50 of 50 resamples", 50
    )
    assert (result.success_rule.low, result.success_rule.high) == (1.0, 1.0)


def test_bootstrap_without_ranking_reports_reason(audit_random_setting):
    data, scores = audit_random_setting
    y = data.success_matrix()
    result = bootstrap_intervals(
        y, select(scores), data.scenes.state_ids, np.zeros(y.shape[1]), None, 50, np.random.default_rng(0)
    )
    assert result.within_query_auroc.low is None
    assert result.within_query_auroc.reason == "ranking metrics are not computable for this input"


def test_identical_clusters_give_degenerate_intervals():
    y = np.tile(np.array([[1.0, 0.0], [0.0, 1.0]]), (1, 5))
    states = np.repeat(np.arange(5), 2)
    result = bootstrap_intervals(
        y, np.tile([0, 1], 5), states, np.full(10, 0.5), None, 100, np.random.default_rng(0)
    )
    assert (result.success_rule.low, result.success_rule.high) == (1.0, 1.0)
    assert (result.gap.low, result.gap.high) == (0.5, 0.5)
    assert (result.advantage.low, result.advantage.high) == (1.0, 1.0)
