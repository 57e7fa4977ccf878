"""Shared by the metric benchmarks and tests/leaderboard/metrics/test_scaling.py: random lab settings and the old AUROC.

`tensor_scene_aurocs` is the previous within-query AUROC (a (Q, K, K)
comparison tensor), kept only as the reference the rank-based one must
reproduce exactly. Project modules are imported inside the functions, so
`audit_equivalence.py` can build its settings with the classes of whatever
revision its subprocess imports.
"""

from __future__ import annotations

import numpy as np


def random_lab_setting(k: int, n_states: int, seed: int):
    """Random outcome tensor (K, 5 x states, 5 seeds) with quality and difficulty structure.

    Returns the data, the (K, Q) success probabilities and the generator,
    whose next draws callers use for scores.
    """
    from leaderboard.matrix import SceneTable, TransferData

    rng = np.random.default_rng(seed)
    q = n_states * 5
    p = np.clip(rng.random((k, 1)) * 0.7 + rng.random((1, q)) * 0.5 - 0.1, 0, 1)
    outcomes = (rng.random((k, q, 5)) < p[..., None]).astype(np.int8)
    scenes = SceneTable(
        scene_ids=tuple(f"s{j}" for j in range(q)),
        state_ids=np.repeat(np.arange(n_states), 5),
        layout_level=np.repeat(rng.integers(0, 4, n_states), 5),
        appearance_draw=np.tile(np.arange(5), n_states),
    )
    return TransferData(tuple(f"e{i}" for i in range(k)), scenes, outcomes), p, rng


def tensor_scene_aurocs(y, scores):
    """The previous within-query AUROC: [s_i > s_j] + [s_i == s_j] / 2 over a (Q, K, K) tensor."""
    from leaderboard.metrics.ranking import labels

    pos, neg = labels(y)
    cols_pos = pos.T.astype(np.float64)
    cols_neg = neg.T.astype(np.float64)
    s = scores.T
    wins = (s[:, :, None] > s[:, None, :]) + 0.5 * (s[:, :, None] == s[:, None, :])
    hits = np.einsum("qi,qij,qj->q", cols_pos, wins, cols_neg)
    n_pairs = cols_pos.sum(axis=1) * cols_neg.sum(axis=1)
    eligible = n_pairs > 0
    auroc = np.full(y.shape[1], np.nan)
    auroc[eligible] = hits[eligible] / n_pairs[eligible]
    return auroc, eligible
