"""Prediction versus ranking (AUDIT_SPEC "Prediction versus ranking").

Pooled AUROC asks whether a score predicts which pairs succeed; within-query
AUROC asks whether it ranks the K candidates of one scene. Most outcome
variance is shared within a scene (`r2_scene`), so the first can be high
while the second is at chance (paper, result 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.chunking import row_blocks
from leaderboard.metrics.ties import sorted_rows, tie_bounds
from leaderboard.metrics.selection import FLOAT_TOLERANCE as _TOLERANCE


@dataclass(frozen=True)
class RankingResult:
    """AUROC of a score matrix against the outcome labels, and `r2_scene`.

    `scene_auroc` (Q,) holds each scene's within-query AUROC (NaN where the
    scene is not eligible); `eligible` (Q,) bool marks scenes with at least
    one positive and one negative candidate. Null values carry a reason.
    """

    pooled_auroc: float | None
    pooled_reason: str | None
    within_query_auroc: float | None
    within_query_reason: str | None
    within_query_eligible_share: float
    scene_auroc: np.ndarray
    eligible: np.ndarray


def labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) boolean masks: y >= 0.8 and y <= 0.2 (others excluded).

    A tolerance of 1e-9 keeps 4/5 = 0.8 a positive whatever the summation order.
    """
    return y >= defaults.POSITIVE_LABEL - _TOLERANCE, y <= defaults.NEGATIVE_LABEL + _TOLERANCE


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of a 1-D array, tied values sharing their average rank."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    return (upper - (counts - 1) / 2.0)[inverse]


def mann_whitney_auroc(positive_scores: np.ndarray, negative_scores: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties count 1/2.

    Computed from average ranks of the pooled scores, O(n log n).
    """
    n_pos, n_neg = len(positive_scores), len(negative_scores)
    ranks = _average_ranks(np.concatenate([positive_scores, negative_scores]))
    rank_sum = ranks[:n_pos].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def pooled_auroc(y: np.ndarray, scores: np.ndarray) -> tuple[float | None, str | None]:
    """AUROC over all labelled (experience, scene) pairs of the setting."""
    pos, neg = labels(y)
    if not pos.any() or not neg.any():
        return None, (
            f"{int(pos.sum())} positive and {int(neg.sum())} negative pairs: "
            "AUROC needs at least one of each"
        )
    return mann_whitney_auroc(scores[pos], scores[neg]), None


def _twice_mann_whitney(scores: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """2 x Mann-Whitney count per row of a block of scenes (rows = scenes, columns = candidates).

    For each positive candidate: the negatives scored below it, plus half the
    negatives tied with it (`2 x` keeps it an exact integer). One stable sort
    per scene groups tied scores (`ties.tie_bounds`); a tie group's negatives
    are counted from the cumulative negative count at its first and last
    position, so a scene costs O(K log K) time and O(K) memory.
    """
    order, ordered = sorted_rows(scores)
    first, last = tie_bounds(ordered)
    is_positive = np.take_along_axis(positive, order, axis=1)
    is_negative = np.take_along_axis(negative, order, axis=1)
    negatives_through = np.cumsum(is_negative, axis=1, dtype=np.int64)
    rows = np.arange(scores.shape[0])[:, None]
    below = negatives_through[rows, first] - is_negative[rows, first]
    tied = negatives_through[rows, last] - below
    return np.where(is_positive, 2 * below + tied, 0).sum(axis=1)


def scene_aurocs(y: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Within-query AUROC of every scene: a rank-based Mann-Whitney per scene, ties averaged.

    Returns (auroc (Q,), eligible (Q,)); auroc is NaN where a scene lacks a
    positive or a negative. O(Q K log K) time; scenes are taken in blocks of
    at most `chunking.CHUNK_ELEMENTS` candidates, so memory is O(K) per scene
    of a block, never a (Q, K, K) comparison tensor. The counts are exact
    (integers and halves), so the result does not depend on the block size.
    """
    pos, neg = labels(y)
    n_pos = pos.sum(axis=0).astype(np.float64)
    n_neg = neg.sum(axis=0).astype(np.float64)
    hits = np.empty(y.shape[1])
    for block in row_blocks(y.shape[1], y.shape[0]):
        hits[block] = _twice_mann_whitney(scores[:, block].T, pos[:, block].T, neg[:, block].T) / 2.0
    n_pairs = n_pos * n_neg
    eligible = n_pairs > 0
    auroc = np.full(y.shape[1], np.nan)
    auroc[eligible] = hits[eligible] / n_pairs[eligible]
    return auroc, eligible


def r2_scene(y: np.ndarray) -> tuple[float | None, str | None]:
    """Share of the variance of y explained by scene difficulty g(q) = mean_i y[i, q].

    `1 - sum (y - g)^2 / sum (y - mean y)^2`; None when y has no variance.
    """
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0.0:
        return None, "all pairs have the same success: there is no variance to explain"
    residual = float(((y - y.mean(axis=0, keepdims=True)) ** 2).sum())
    return 1.0 - residual / total, None


def ranking_metrics(y: np.ndarray, scores: np.ndarray) -> RankingResult:
    """Pooled and within-query AUROC of `scores` (K, Q) against labels from `y` (K, Q)."""
    pooled, pooled_reason = pooled_auroc(y, scores)
    per_scene, eligible = scene_aurocs(y, scores)
    if eligible.any():
        within, within_reason = float(per_scene[eligible].mean()), None
    else:
        within, within_reason = None, (
            "no scene has both a positive (y >= 0.8) and a negative (y <= 0.2) candidate"
        )
    return RankingResult(
        pooled_auroc=pooled,
        pooled_reason=pooled_reason,
        within_query_auroc=within,
        within_query_reason=within_reason,
        within_query_eligible_share=float(eligible.mean()),
        scene_auroc=per_scene,
        eligible=eligible,
    )
