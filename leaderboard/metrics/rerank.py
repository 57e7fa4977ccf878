"""Hubness corrections of a score matrix: CSLS and mutual proximity.

Both adjust similarity scores to reduce the dominance of experiences that are
"close" to every scene (hubs); the paper (Table III) finds they barely move
the advantage, much less than changing the library does.
"""

from __future__ import annotations

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.chunking import row_blocks
from leaderboard.metrics.ties import sorted_rows, tie_bounds


def _mean_top_k(scores: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Mean of the k largest values along `axis` (k clipped to the axis length)."""
    k = max(1, min(k, scores.shape[axis]))
    n = scores.shape[axis]
    top = np.partition(scores, n - k, axis=axis)
    top = np.take(top, np.arange(n - k, n), axis=axis)
    return top.mean(axis=axis)


def csls(scores: np.ndarray, k: int = defaults.CSLS_K) -> np.ndarray:
    """Cross-domain similarity local scaling (Conneau et al., 2018), shape (K, Q).

    `csls[i, q] = 2 s[i, q] - r_exp(i) - r_scene(q)`, where `r_exp(i)` is
    the mean of experience i's k highest scores over scenes and `r_scene(q)`
    the mean of scene q's k highest scores over experiences. An experience
    that scores high everywhere (a hub) is penalised.

    Scores so large that `2 s` would overflow are first divided by their
    largest magnitude: CSLS scales with the scores, so every scene's
    ranking is kept, and the result stays finite.
    """
    largest = float(np.max(np.abs(scores))) if scores.size else 0.0
    if largest > np.finfo(np.float64).max / 4:
        scores = scores / largest
    r_experience = _mean_top_k(scores, k, axis=1)  # (K,)
    r_scene = _mean_top_k(scores, k, axis=0)  # (Q,)
    return 2.0 * scores - r_experience[:, None] - r_scene[None, :]


def _empirical_cdf_rows(scores: np.ndarray) -> np.ndarray:
    """Per row, the mid-rank empirical CDF of each entry within its row.

    `F[i, q] = (#{q': s[i,q'] < s[i,q]} + #{q': s[i,q'] == s[i,q]} / 2) / Q`,
    i.e. `(first + last + 1) / (2 Q)` over the positions of s[i, q]'s tie
    group in the sorted row. Rows are taken in blocks (`chunking.row_blocks`).
    """
    out = np.empty(scores.shape)
    n_cols = scores.shape[1]
    for block in row_blocks(scores.shape[0], n_cols):
        order, ordered = sorted_rows(scores[block])
        first, last = tie_bounds(ordered)
        np.put_along_axis(out[block], order, (first + last + 1) / (2.0 * n_cols), axis=1)
    return out


def mutual_proximity(scores: np.ndarray) -> np.ndarray:
    """Empirical mutual proximity (Schnitzer et al., 2012), shape (K, Q).

    For similarities, `MP[i, q] = F_i(s[i, q]) * G_q(s[i, q])`: the
    probability, under independence, that s[i, q] exceeds both a random score
    of experience i (its row distribution F_i) and a random score of scene q
    (its column distribution G_q). A pair is close only when each side ranks
    the other highly.
    """
    return _empirical_cdf_rows(scores) * _empirical_cdf_rows(scores.T).T
