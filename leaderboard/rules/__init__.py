"""The reference rules published beside every submitted rule.

`registry` declares every rule once (name, family, display name, scorer);
`simple` and `outcome_scores` hold the rules that need no images (random,
oracle, best-fixed, recency, track record); `structural` reads the scenes' geometry;
`embeddings` scores query and base images with an image encoder;
`baselines` audits them all for a setting and writes their reports. This
layer sits above the audit engine and the frozen data readers, and imports
the simulator only for scene geometry.
"""

from leaderboard.rules.registry import (RULES, Family, Rule, UnknownRuleError, baseline_submission_id,
                                        display_name, get_rule, hindsight_rules, rule_names)
from leaderboard.rules.simple import (SCORED_RULES, RandomRow, best_fixed_scores, oracle_scores,
                                      random_row, recency_scores, track_record_scores)

__all__ = [
    "SCORED_RULES", "RULES", "Family", "RandomRow", "Rule", "UnknownRuleError", "baseline_submission_id",
    "best_fixed_scores", "display_name", "get_rule", "hindsight_rules", "oracle_scores", "random_row",
    "recency_scores", "rule_names", "track_record_scores",
]
