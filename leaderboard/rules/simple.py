"""Reference rules that need no images: random, oracle, best_fixed, recency, track_record.

They are published as baseline rows next to every submitted rule, and each is
declared once, with its score function, in the rule registry. The score
functions (`outcome_scores`) return a (K, Q) matrix that `run_audit`
accepts; `random` is an expected value and has none (see `random_row`).
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.matrix import TransferData
from leaderboard.metrics.reference import library_references
from leaderboard.metrics.selection import advantage, oracle_tie_counts
from leaderboard.rules.outcome_scores import (best_fixed_scores, oracle_scores, recency_scores,
                                              track_record_scores)
from leaderboard.rules.registry import RULES, Rule

__all__ = ["SCORED_RULES", "RandomRow", "best_fixed_scores", "oracle_scores", "random_row",
           "recency_scores", "track_record_scores"]


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


SCORED_RULES: dict[str, Rule] = {rule.name: rule for rule in RULES if rule.scores is not None}
"""The registry's rules with a score matrix, by name; `random` is separate (`random_row`), as it has none."""
