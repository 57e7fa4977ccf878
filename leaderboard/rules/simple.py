"""Reference rules that need no images: random, oracle, best_fixed, recency, track_record.

They are published as baseline rows next to every submitted rule. Each
returns a score matrix (K, Q) that `run_audit` accepts, except `random`,
which is an expected value and has no score matrix (see `random_row`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from leaderboard.matrix import TransferData
from leaderboard.metrics.reference import library_references
from leaderboard.metrics.selection import advantage, oracle_tie_counts


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
        raise ValueError(f"track_record needs a complete outcome tensor; {data.n_missing} cells missing")
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


@dataclass(frozen=True)
class RandomRow:
    """The `random` baseline as an expected value; no selection is ever drawn.

    Its success is `success_random` (mean of y over all pairs), its advantage
    0 by definition (None when the oracle-random denominator is too small),
    and its expected selection count is Q/K for every experience, so its
    top-pick share is 1/K.
    """

    success_rule: float
    advantage: float | None
    advantage_reason: str | None
    expected_selection_count: float
    top_pick_share: float
    concentration_ratio: float

    def to_dict(self) -> dict:
        return {
            "success_rule": self.success_rule,
            "advantage": self.advantage,
            "advantage_reason": self.advantage_reason,
            "expected_selection_count": self.expected_selection_count,
            "top_pick_share": self.top_pick_share,
            "concentration_ratio": self.concentration_ratio,
        }


def random_row(data: TransferData) -> RandomRow:
    """The expected-value `random` baseline of a setting (see `RandomRow`)."""
    y = data.success_matrix()
    n_experiences, n_scenes = y.shape
    success_random, success_oracle, _ = library_references(y)
    value, reason = advantage(success_random, success_random, success_oracle)
    share = 1.0 / n_experiences
    oracle_share = float(oracle_tie_counts(y).max() / n_scenes)
    return RandomRow(
        success_rule=success_random,
        advantage=value,
        advantage_reason=reason,
        expected_selection_count=n_scenes / n_experiences,
        top_pick_share=share,
        concentration_ratio=share / oracle_share,
    )


@dataclass(frozen=True)
class ReferenceRule:
    """A baseline rule: its score function and whether it only names one experience.

    `selection_only` rules (a fixed choice) are audited with
    `selection_only=True`: their scores carry no ranking to measure.
    """

    name: str
    scores: Callable[[TransferData], np.ndarray]
    selection_only: bool
    description: str


REFERENCE_RULES: dict[str, ReferenceRule] = {
    rule.name: rule
    for rule in (
        ReferenceRule("oracle", oracle_scores, False, "hindsight best experience per scene"),
        ReferenceRule("best_fixed", best_fixed_scores, True, "hindsight best single experience"),
        ReferenceRule("recency", recency_scores, True, "newest experience in the library"),
        ReferenceRule(
            "track_record",
            track_record_scores,
            False,
            "Laplace-smoothed success of executed experiences, one seed per scene (q mod S)",
        ),
    )
}
"""Rules with a score matrix; `random` is separate (`random_row`), as it has none."""
