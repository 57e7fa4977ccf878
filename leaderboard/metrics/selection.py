"""Rule selection and its success, the two operations every metric is built on.

AUDIT_SPEC "Selection": `sel(q) = argmax_i score[i, q]` with ties to the
lowest library index, and `S(sel) = mean_q y[sel(q), q]`.
"""

from __future__ import annotations

import numpy as np

from leaderboard.metrics import defaults

FLOAT_TOLERANCE = 1e-9
"""Slack for threshold comparisons on means of 0/1 outcomes (exact ratios in theory)."""


def select(scores: np.ndarray) -> np.ndarray:
    """Selected experience index per scene.

    Parameters
    ----------
    scores : (K, Q) float array, higher = more preferred.

    Returns
    -------
    (Q,) int array; `np.argmax` returns the first maximum, which is the
    lowest library index among ties, as the spec requires.
    """
    return np.argmax(scores, axis=0)


def success(y: np.ndarray, sel: np.ndarray) -> float:
    """S(sel): mean over scenes of the selected experience's success.

    Parameters
    ----------
    y : (K, Q) mean success over seeds.
    sel : (Q,) selected experience index per scene.
    """
    return float(y[sel, np.arange(y.shape[1])].mean())


def advantage(
    success_rule: float, success_random: float, success_oracle: float
) -> tuple[float | None, str | None]:
    """A = (S - random) / (oracle - random), or (None, reason) when undefined.

    The denominator threshold is fixed in advance
    (`defaults.ADVANTAGE_MIN_DENOMINATOR`); below it A is not reported. The
    comparison allows `FLOAT_TOLERANCE` so that a denominator of exactly 0.05
    (a ratio of counts) is not lost to rounding.
    """
    denominator = success_oracle - success_random
    if denominator < defaults.ADVANTAGE_MIN_DENOMINATOR - FLOAT_TOLERANCE:
        return None, (
            f"oracle - random = {denominator:.4f} is below "
            f"{defaults.ADVANTAGE_MIN_DENOMINATOR}: the library leaves too little "
            "room between random and oracle selection"
        )
    return (success_rule - success_random) / denominator, None


def oracle_tie_counts(y: np.ndarray) -> np.ndarray:
    """Oracle's fractional selection counts, shape (K,).

    In each scene the oracle's one selection is split evenly among all
    experiences tied at `max_i y[i, q]`.
    """
    best = y.max(axis=0, keepdims=True)
    tied = (y == best).astype(np.float64)
    return (tied / tied.sum(axis=0, keepdims=True)).sum(axis=1)
