"""Reference quantities of AUDIT_SPEC: random, oracle, best-fixed, advantage, quality.

They put a rule's success on the library's own scale: what random selection,
perfect per-scene selection and the best single experience (chosen in
hindsight) would reach on the same transfer matrix (paper, Sec. "Metrics").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics.selection import advantage, success


@dataclass(frozen=True)
class ReferenceResult:
    """Reference quantities for one rule on one transfer matrix.

    `quality` and `margin` are (K,) arrays in library order; `best_fixed` is
    a library index. `advantage`/`best_fixed_advantage` are None when the
    oracle-random denominator is below threshold, with `advantage_reason`.
    """

    success_rule: float
    success_random: float
    success_oracle: float
    best_fixed: int
    success_best_fixed: float
    headroom: float
    advantage: float | None
    advantage_reason: str | None
    best_fixed_advantage: float | None
    quality: np.ndarray
    margin: np.ndarray


def library_references(y: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(success_random, success_oracle, quality) of a transfer matrix y (K, Q)."""
    quality = y.mean(axis=1)
    return float(y.mean()), float(y.max(axis=0).mean()), quality


def reference_quantities(y: np.ndarray, sel: np.ndarray) -> ReferenceResult:
    """All reference quantities for selection `sel` on transfer matrix `y`.

    Parameters
    ----------
    y : (K, Q) mean success over seeds.
    sel : (Q,) selected library index per scene.
    """
    success_random, success_oracle, quality = library_references(y)
    best_fixed = int(np.argmax(quality))  # first maximum = lowest index
    success_best_fixed = float(quality[best_fixed])
    success_rule = success(y, sel)
    adv, reason = advantage(success_rule, success_random, success_oracle)
    bf_adv, _ = advantage(success_best_fixed, success_random, success_oracle)
    return ReferenceResult(
        success_rule=success_rule,
        success_random=success_random,
        success_oracle=success_oracle,
        best_fixed=best_fixed,
        success_best_fixed=success_best_fixed,
        headroom=success_oracle - success_best_fixed,
        advantage=adv,
        advantage_reason=reason,
        best_fixed_advantage=bf_adv,
        quality=quality,
        margin=quality - quality.mean(),
    )
