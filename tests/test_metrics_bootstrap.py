"""Cluster bootstrap over states: counts, re-weighting and a loop cross-check."""

import numpy as np
import pytest

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


def test_bootstrap_matches_a_loop_over_resampled_states(audit_random_setting):
    data, scores = audit_random_setting
    y = data.success_matrix()
    sel = select(scores)
    shuffle_mean = np.full(y.shape[1], 0.4)
    scene_auroc = np.where(np.arange(y.shape[1]) % 4 == 0, np.nan, np.linspace(0.2, 0.9, y.shape[1]))
    result = bootstrap_intervals(
        y, sel, data.scenes.state_ids, shuffle_mean, scene_auroc, 300, np.random.default_rng(9)
    )
    index, n_clusters = cluster_index(data.scenes.state_ids)
    weights = resample_counts(n_clusters, 300, np.random.default_rng(9))
    rule, best, gap, within, adv = [], [], [], [], []
    for w in weights:
        scenes = [q for q in range(y.shape[1]) for _ in range(w[index[q]])]
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
