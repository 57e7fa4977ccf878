"""Cluster-bootstrap intervals over `state_id` (AUDIT_SPEC "Intervals").

All renders of one physical state share its layout, so scenes of one state
are not independent; resampling whole states (40 clusters in the paper's
settings) gives honest intervals. Every statistic here is a ratio of sums
over scenes, so a resample is a vector of cluster multiplicities `w` (C,)
and each statistic is `w @ cluster_sums / w @ cluster_sizes`: all resamples
are one (B, C) count matrix times per-cluster aggregates. The count matrix
is drawn and multiplied in blocks of resamples (`chunking.row_blocks`; the
generator's stream is the same whatever the block size), so memory is
O(block x max(C, K)) and time O(B x C x K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.chunking import row_blocks
from leaderboard.metrics.selection import FLOAT_TOLERANCE


@dataclass(frozen=True)
class Interval:
    """Percentile interval [low, high], or None with a reason.

    `n_undefined` counts resamples on which the statistic was undefined (and
    were therefore left out of the percentiles).
    """

    low: float | None
    high: float | None
    reason: str | None = None
    n_undefined: int = 0


@dataclass(frozen=True)
class BootstrapResult:
    """The intervals of the report; `n_clusters` is the number of states."""

    success_rule: Interval
    advantage: Interval
    success_best_fixed: Interval
    gap: Interval
    within_query_auroc: Interval
    n_clusters: int
    headroom_cf: Interval = Interval(None, None, "the cross-fitted oracle was not computed")
    """`success_oracle_cf - success_random` (`leaderboard.metrics.noise`), same resamples."""


def cluster_index(state_ids: np.ndarray) -> tuple[np.ndarray, int]:
    """(cluster index per scene (Q,), number of clusters C)."""
    _, inverse = np.unique(np.asarray(state_ids), return_inverse=True)
    return inverse.ravel(), int(inverse.max()) + 1 if len(inverse) else 0


def cluster_sums(index: np.ndarray, n_clusters: int, values: np.ndarray) -> np.ndarray:
    """Sum of per-scene `values` (Q,) or (Q, m) within each cluster -> (C,) or (C, m)."""
    out = np.zeros((n_clusters,) + values.shape[1:])
    np.add.at(out, index, values)
    return out


def resample_counts(n_clusters: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, C) multiplicities: each row draws C clusters with replacement (multinomial)."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_resamples)


def percentile_interval(values: np.ndarray, what: str, confidence: float = defaults.CONFIDENCE) -> Interval:
    """Central percentile interval of the defined (finite) resample values."""
    defined = np.isfinite(values)
    n_undefined = int((~defined).sum())
    if defined.mean() < defaults.MIN_DEFINED_RESAMPLE_SHARE:
        return Interval(
            None, None, (f"{what} is undefined on {n_undefined} of {len(values)} resamples"), n_undefined
        )
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values[defined], [tail, 100.0 - tail])
    return Interval(float(low), float(high), None, n_undefined)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Elementwise ratio with NaN where the denominator is 0."""
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _resampled_totals(
    sums: np.ndarray,
    quality_sums: np.ndarray,
    auroc_sums: np.ndarray | None,
    n_bootstrap: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-resample totals `w @ aggregates` of B resamples, drawn in blocks of resamples.

    Returns (w @ sums (B, m), max_i (w @ quality_sums)[i] (B,), w @ auroc_sums
    (B, 2) or None). Only one block's (block, C) weights and (block, K)
    experience totals exist at a time.
    """
    n_clusters = sums.shape[0]
    totals = np.empty((n_bootstrap, sums.shape[1]))
    best = np.empty(n_bootstrap)
    auroc = None if auroc_sums is None else np.empty((n_bootstrap, auroc_sums.shape[1]))
    for block in row_blocks(n_bootstrap, max(n_clusters, quality_sums.shape[1])):
        weights = resample_counts(n_clusters, block.stop - block.start, rng).astype(np.float64)
        totals[block] = weights @ sums
        best[block] = (weights @ quality_sums).max(axis=1)
        if auroc is not None:
            auroc[block] = weights @ auroc_sums
    return totals, best, auroc


def bootstrap_intervals(
    y: np.ndarray,
    sel: np.ndarray,
    state_ids: np.ndarray,
    scene_shuffle_mean: np.ndarray,
    scene_auroc: np.ndarray | None,
    n_bootstrap: int,
    rng: np.random.Generator,
    scene_oracle_cf: np.ndarray | None = None,
) -> BootstrapResult:
    """Cluster-bootstrap intervals of the rule's headline numbers.

    Parameters
    ----------
    y : (K, Q) mean success; sel : (Q,) selection; state_ids : (Q,) clusters.
    scene_shuffle_mean : (Q,) mean shuffled success per scene (the shuffles
        are drawn once and re-weighted, as AUDIT_SPEC allows).
    scene_auroc : (Q,) within-query AUROC per scene, NaN where not eligible;
        None when the ranking metrics are not computable.
    scene_oracle_cf : (Q,) cross-fitted oracle success per scene
        (`noise.oracle_cf_by_scene`); gives the `headroom_cf` interval. It only
        adds a column to the per-scene sums, so the resamples are the same.
    """
    index, n_clusters = cluster_index(state_ids)
    scene_index = np.arange(y.shape[1])
    per_scene = np.column_stack(
        [
            np.ones(y.shape[1]),
            y[sel, scene_index],
            y.mean(axis=0),
            y.max(axis=0),
            y[sel, scene_index] - scene_shuffle_mean,
        ]
        + ([] if scene_oracle_cf is None else [scene_oracle_cf - y.mean(axis=0)])
    )
    sums = cluster_sums(index, n_clusters, per_scene)
    quality_sums = cluster_sums(index, n_clusters, y.T)  # (C, K)
    auroc_sums = None
    if scene_auroc is not None:
        eligible = np.isfinite(scene_auroc)
        auroc_sums = cluster_sums(
            index,
            n_clusters,
            np.column_stack([np.where(eligible, scene_auroc, 0.0), eligible.astype(np.float64)]),
        )
    totals, best_fixed, auroc_totals = _resampled_totals(sums, quality_sums, auroc_sums, n_bootstrap, rng)
    size, rule, random, oracle, gap = totals.T[:5]
    rule, random, oracle, gap = rule / size, random / size, oracle / size, gap / size
    headroom_cf = Interval(None, None, "the cross-fitted oracle was not computed")
    if scene_oracle_cf is not None:
        headroom_cf = percentile_interval(totals[:, 5] / size, "headroom_cf")
    best_fixed = best_fixed / size
    denominator = oracle - random
    advantage = np.where(
        denominator >= defaults.ADVANTAGE_MIN_DENOMINATOR - FLOAT_TOLERANCE,
        (rule - random) / np.where(denominator > 0, denominator, 1.0),
        np.nan,
    )
    if auroc_totals is None:
        within = Interval(None, None, "ranking metrics are not computable for this input")
    else:
        hits, count = auroc_totals.T
        within = percentile_interval(_ratio(hits, count), "within_query_auroc")
    return BootstrapResult(
        success_rule=percentile_interval(rule, "success_rule"),
        advantage=percentile_interval(advantage, "advantage"),
        success_best_fixed=percentile_interval(best_fixed, "success_best_fixed"),
        gap=percentile_interval(gap, "gap"),
        within_query_auroc=within,
        n_clusters=n_clusters,
        headroom_cf=headroom_cf,
    )


def headroom_cf_interval(
    y: np.ndarray,
    state_ids: np.ndarray,
    scene_oracle_cf: np.ndarray,
    n_bootstrap: int,
    rng: np.random.Generator,
) -> Interval:
    """The `headroom_cf` interval alone, from the same resamples as `bootstrap_intervals`.

    Given a generator in the same state, it draws the same (B, C) counts in the same order
    (row by row, whatever the block size), so it equals the report's interval; the data
    pages use it to label a setting without auditing a rule.
    """
    index, n_clusters = cluster_index(state_ids)
    sums = cluster_sums(index, n_clusters, np.column_stack([np.ones(y.shape[1]),
                                                            scene_oracle_cf - y.mean(axis=0)]))
    totals = np.empty((n_bootstrap, 2))
    for block in row_blocks(n_bootstrap, max(n_clusters, y.shape[0])):
        weights = resample_counts(n_clusters, block.stop - block.start, rng).astype(np.float64)
        totals[block] = weights @ sums
    return percentile_interval(totals[:, 1] / totals[:, 0], "headroom_cf")
