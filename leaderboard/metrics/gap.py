"""Discrimination gap against frequency-matched shuffles (AUDIT_SPEC "Discrimination gap").

A shuffle permutes the scene positions of the selection vector,
`sel_pi(q) = sel(pi(q))`: every experience keeps its selection count, only
the pairing with scenes is random. The gap is what the rule's scene
assignment adds beyond its selection frequencies (paper, result 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.chunking import row_blocks


@dataclass(frozen=True)
class GapResult:
    """Gap of a rule against its frequency-matched shuffles on a set of scenes.

    `scene_shuffle_mean` (n_scenes,) is, per scene, the mean success of the
    shuffled selections there; the bootstrap re-weights it per cluster. All
    numbers are None (with `reason`) when the subset has fewer than 2 scenes.
    """

    gap: float | None
    shuffle_mean: float | None
    envelope_low: float | None
    envelope_high: float | None
    significant: bool | None
    direction: str | None
    n_scenes: int
    reason: str | None
    scene_shuffle_mean: np.ndarray


def permutation_matrix(n_shuffles: int, n_positions: int, rng: np.random.Generator) -> np.ndarray:
    """(n_shuffles, n_positions) int array, each row a uniform random permutation."""
    base = np.tile(np.arange(n_positions), (n_shuffles, 1))
    return rng.permuted(base, axis=1, out=base)


def discrimination_gap(
    y: np.ndarray,
    sel: np.ndarray,
    n_shuffles: int,
    rng: np.random.Generator,
    confidence: float = defaults.CONFIDENCE,
) -> GapResult:
    """Gap of selection `sel` (Q,) on transfer matrix `y` (K, Q).

    The shuffles are drawn in blocks of rows of one permutation index matrix
    (`chunking.row_blocks`: the generator's stream, and so every draw, is the
    same whatever the block size); the shuffled success of every shuffle is
    one gather and one mean. Memory is O(block x Q), time O(n_shuffles x Q).
    The envelope is the central `confidence` interval of
    `S(sel_pi) - shuffle_mean` over the shuffles.
    """
    n_scenes = y.shape[1]
    if n_scenes < 2:
        return GapResult(
            None,
            None,
            None,
            None,
            None,
            None,
            n_scenes,
            f"{n_scenes} scene(s) in this subset: a shuffle needs at least 2",
            np.full(n_scenes, np.nan),
        )
    scene_index = np.arange(n_scenes)
    rule = float(y[sel, scene_index].mean())
    shuffled_success = np.empty(n_shuffles)
    outcome_sums = np.zeros(n_scenes)
    for block in row_blocks(n_shuffles, n_scenes):
        permutations = permutation_matrix(block.stop - block.start, n_scenes, rng)
        shuffled_outcome = y[sel[permutations], scene_index]  # (block, Q)
        shuffled_success[block] = shuffled_outcome.mean(axis=1)
        outcome_sums += shuffled_outcome.sum(axis=0)
    shuffle_mean = float(shuffled_success.mean())
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(shuffled_success - shuffle_mean, [tail, 100.0 - tail])
    gap = rule - shuffle_mean
    direction = "above" if gap > high else "below" if gap < low else None
    return GapResult(
        gap=gap,
        shuffle_mean=shuffle_mean,
        envelope_low=float(low),
        envelope_high=float(high),
        significant=direction is not None,
        direction=direction,
        n_scenes=n_scenes,
        reason=None,
        scene_shuffle_mean=outcome_sums / n_shuffles,
    )


def subset_masks(layout_level: np.ndarray, appearance_draw: np.ndarray) -> dict[str, np.ndarray]:
    """Scene masks of the three gap variants, keyed as in the report.

    `appearance`: layout_level == 0 (only appearance differs between scenes);
    `layout`: appearance_draw == 0 and layout_level >= 1 (only layout differs).
    """
    return {
        "all": np.ones(layout_level.shape, dtype=bool),
        "appearance": layout_level == 0,
        "layout": (appearance_draw == 0) & (layout_level >= 1),
    }
