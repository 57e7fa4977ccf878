"""The reference rules published beside every submitted rule.

`simple` needs no images (random, oracle, best-fixed, recency, track record);
`structural` reads the scenes' geometry; `embeddings` scores query and base
images with an image encoder; `baselines` audits them all for a setting and
writes their reports. This layer sits above the audit engine and the frozen
data readers, and imports the simulator only for scene geometry.
"""

from leaderboard.rules.simple import (RandomRow, ReferenceRule, best_fixed_scores, oracle_scores,
                                      random_row, recency_scores, track_record_scores)

__all__ = [
    "RandomRow", "ReferenceRule", "best_fixed_scores", "oracle_scores", "random_row",
    "recency_scores", "track_record_scores",
]
