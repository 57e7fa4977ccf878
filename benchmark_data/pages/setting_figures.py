"""Setting-level figures of a success matrix, read from the audit engine, and the benchmark's bar.

`summarize` takes the engine's reference quantities (random, oracle,
best-fixed and its advantage, headroom), the oracle's tie-split top-pick share
and `r2_scene` for a whole matrix, so the generated pages and the leaderboard
share one definition of each. The bar every published setting has to meet
is `leaderboard.metrics.discrimination`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.metrics.ranking import r2_scene
from leaderboard.metrics.reference import reference_quantities
from leaderboard.metrics.selection import oracle_tie_counts, select



@dataclass(frozen=True)
class MatrixSummary:
    """Reference quantities of one transfer matrix y (K x Q); `r2_scene` None when y has no variance."""

    k: int
    n_scenes: int
    random: float
    oracle: float
    best_fixed: int
    best_fixed_success: float
    best_fixed_advantage: float | None
    headroom: float
    oracle_top_pick_share: float
    r2_scene: float | None


def summarize(y: np.ndarray) -> MatrixSummary:
    """AUDIT_SPEC quantities of a success matrix `y` (K x Q, values in [0, 1]), by the audit engine."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2 or y.size == 0:
        raise BadArgument(f"y must be a non-empty (K, Q) matrix, got shape {y.shape}")
    # the library-level quantities do not depend on the selection; the oracle's is used
    ref = reference_quantities(y, select(y))
    r2, _ = r2_scene(y)
    return MatrixSummary(k=y.shape[0], n_scenes=y.shape[1], random=ref.success_random,
                         oracle=ref.success_oracle, best_fixed=ref.best_fixed,
                         best_fixed_success=ref.success_best_fixed,
                         best_fixed_advantage=ref.best_fixed_advantage, headroom=ref.headroom,
                         oracle_top_pick_share=float(oracle_tie_counts(y).max() / y.shape[1]),
                         r2_scene=r2)
