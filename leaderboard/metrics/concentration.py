"""Concentration of a rule's selections against the oracle's (AUDIT_SPEC "Concentration").

The selection distribution is the first of the two cheap reports: a rule that
keeps choosing one experience scores that experience's quality, whatever its
per-scene skill (paper, result 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics.selection import oracle_tie_counts


@dataclass(frozen=True)
class ConcentrationResult:
    """Selection counts and the rule's top-pick share against the oracle's.

    `selection_counts` (K,) int and `oracle_counts` (K,) float are in library
    order; `top_pick` is a library index. `sign_match` is None when the
    advantage is None.
    """

    selection_counts: np.ndarray
    oracle_counts: np.ndarray
    top_pick: int
    top_pick_share: float
    oracle_top_pick_share: float
    concentration_ratio: float
    top_pick_margin: float
    sign_match: bool | None


def concentration(
    y: np.ndarray, sel: np.ndarray, margin: np.ndarray, advantage: float | None
) -> ConcentrationResult:
    """Concentration metrics of selection `sel` (Q,) on transfer matrix `y` (K, Q).

    `margin` (K,) is quality minus mean quality (see `reference_quantities`);
    `advantage` is the rule's A or None.
    """
    n_experiences, n_scenes = y.shape
    counts = np.bincount(sel, minlength=n_experiences)
    oracle_counts = oracle_tie_counts(y)
    top_pick = int(np.argmax(counts))  # ties: lowest index
    top_share = counts[top_pick] / n_scenes
    oracle_share = float(oracle_counts.max() / n_scenes)
    top_margin = float(margin[top_pick])
    sign_match = None if advantage is None else bool(np.sign(advantage) == np.sign(top_margin))
    return ConcentrationResult(
        selection_counts=counts,
        oracle_counts=oracle_counts,
        top_pick=top_pick,
        top_pick_share=float(top_share),
        oracle_top_pick_share=oracle_share,
        concentration_ratio=float(top_share / oracle_share),
        top_pick_margin=top_margin,
        sign_match=sign_match,
    )
