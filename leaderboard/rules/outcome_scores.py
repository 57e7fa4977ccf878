"""Score functions of the outcome rules that have a score matrix: oracle, best-fixed, recency, track record.

Each takes a complete transfer matrix and returns (K, Q) scores that
`run_audit` accepts; the rule registry declares each rule with its function
here. `random` has none: it is an expected value (`simple.random_row`).
"""

from __future__ import annotations

import numpy as np

from leaderboard.matrix import IncompleteOutcomes, TransferData


def _one_hot_rows(n_experiences: int, n_scenes: int, row: int) -> np.ndarray:
    """Scores that always select experience `row`: 1 there, 0 elsewhere."""
    scores = np.zeros((n_experiences, n_scenes))
    scores[row] = 1.0
    return scores


def oracle_scores(data: TransferData) -> np.ndarray:
    """Hindsight per-scene choice: the score is the outcome itself, y[i, q].

    Its selection is an experience with the highest success in each scene
    (lowest index among ties), so its advantage is 1 by construction.
    """
    return data.success_matrix().copy()


def best_fixed_scores(data: TransferData) -> np.ndarray:
    """Always the experience with the highest mean success (hindsight; ties lowest index)."""
    quality = data.success_matrix().mean(axis=1)
    k, q = quality.shape[0], data.scenes.n_scenes
    return _one_hot_rows(k, q, int(np.argmax(quality)))


def recency_scores(data: TransferData) -> np.ndarray:
    """Always the newest experience: the last one in library order (index K - 1)."""
    k, q = len(data.experience_ids), data.scenes.n_scenes
    return _one_hot_rows(k, q, k - 1)


def track_record_scores(data: TransferData) -> np.ndarray:
    """Laplace-smoothed record of the experiences executed so far, scene by scene.

    Scenes are visited in published order (the scene table's order). Before
    scene q every experience i scores `(wins_i + 1) / (tries_i + 2)` over the
    scenes already visited; the rule executes the best (lowest index among
    ties) and observes only that experience's outcome, with one seed per
    scene: seed index `q mod S`. The returned column q is the score the rule
    held when it chose for scene q, so `argmax` reproduces its choices.
    """
    outcomes = data.outcomes
    if not data.is_complete:
        raise IncompleteOutcomes(f"track_record needs a complete outcome tensor; "
                                 f"{data.n_missing} cells missing")
    n_experiences, n_scenes, n_seeds = outcomes.shape
    wins = np.zeros(n_experiences)
    tries = np.zeros(n_experiences)
    scores = np.empty((n_experiences, n_scenes))
    for q in range(n_scenes):
        scores[:, q] = (wins + 1.0) / (tries + 2.0)
        pick = int(np.argmax(scores[:, q]))
        wins[pick] += outcomes[pick, q, q % n_seeds]
        tries[pick] += 1.0
    return scores
