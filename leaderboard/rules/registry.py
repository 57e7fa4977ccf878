"""Every reference rule, declared once: its name, family, display name and scorer.

The published rows, the findings and the generated pages look a rule up here
(`get_rule`, `rule_names`) instead of keeping their own list of names. Declaration order
is table order: the outcome rules (`OUTCOME`), then the structural (`STRUCTURAL`, scored
together by `structural.structural_rule_scores`), then the embedding rules (`EMBEDDING`,
the encoder named like the rule: `embeddings.load_encoder`). A `hindsight` rule
(random, oracle, best-fixed) is drawn as a reference line, never ranked.
What each rule reads and scores: docs/reference_rules.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np

from expaudit.errors import InternalError, UnknownName
from leaderboard.matrix import TransferData
from leaderboard.rules.outcome_scores import (best_fixed_scores, oracle_scores, recency_scores,
                                              track_record_scores)

__all__ = ["RULES", "Family", "Rule", "UnknownRuleError", "baseline_submission_id", "display_name",
           "get_rule", "hindsight_rules", "rule_names"]


class Family(str, Enum):
    """What a reference rule reads to score the library."""

    OUTCOME = "outcome"
    STRUCTURAL = "structural"
    EMBEDDING = "embedding"


class UnknownRuleError(UnknownName, ValueError):
    """A name that is not a declared reference rule."""


@dataclass(frozen=True)
class Rule:
    """One reference rule.

    name : the published id (report files, row ids, JSON keys).
    family : what it reads (`Family`).
    display_name : how its row is called on the leaderboard.
    description : one line on what it picks.
    scores : the scorer, data -> (K, Q) scores, for the outcome rules that
        have a score matrix; None for `random` (an expected value) and for the
        scene rules, which are scored per setting by their family.
    selection_only : audited as a selection-only submission (a fixed choice
        carries no ranking to measure).
    hindsight : a reference line (random, oracle, best-fixed), not ranked.
    """

    name: str
    family: Family
    display_name: str
    description: str
    scores: Callable[[TransferData], np.ndarray] | None = None
    selection_only: bool = False
    hindsight: bool = False

    @property
    def needs_scenes(self) -> bool:
        """True when the rule reads the setting's frozen scenes (layouts or images), not only outcomes."""
        return self.family is not Family.OUTCOME


def _embedding(name: str, display: str, description: str) -> Rule:
    return Rule(name, Family.EMBEDDING, display, description)


RULES: tuple[Rule, ...] = (
    Rule("random", Family.OUTCOME, "random (expected value)",
         "expected success of a uniformly random pick; no selection is drawn",
         selection_only=True, hindsight=True),
    Rule("oracle", Family.OUTCOME, "oracle (hindsight)", "hindsight best experience per scene",
         scores=oracle_scores, hindsight=True),
    Rule("best_fixed", Family.OUTCOME, "best-fixed (hindsight)", "hindsight best single experience",
         scores=best_fixed_scores, selection_only=True, hindsight=True),
    Rule("recency", Family.OUTCOME, "recency (newest experience)", "newest experience in the library",
         scores=recency_scores, selection_only=True),
    Rule("track_record", Family.OUTCOME, "track record (Laplace-smoothed)",
         "Laplace-smoothed success of executed experiences, one seed per scene (q mod S)",
         scores=track_record_scores),
    Rule("object_proximity", Family.STRUCTURAL, "object proximity (layout)",
         "closest object positions between the query and the base scene"),
    Rule("path_clearance", Family.STRUCTURAL, "path clearance (layout)",
         "largest clearance of the retargeted path from the query's obstacle"),
    _embedding("raw32", "raw32 (32x32 pixels, L2)", "nearest base scene in 32x32 RGB pixels"),
    _embedding("mobilenet_v2", "MobileNetV2 embedding", "nearest base scene, ImageNet MobileNetV2"),
    _embedding("efficientnet_lite0", "EfficientNet-Lite0 embedding",
               "nearest base scene, ImageNet EfficientNet-Lite0"),
    _embedding("resnet18", "ResNet-18 embedding", "nearest base scene, ImageNet ResNet-18"),
    _embedding("dinov2", "DINOv2 embedding", "nearest base scene, DINOv2"),
    _embedding("clip", "CLIP embedding", "nearest base scene, CLIP image encoder"),
    _embedding("policy_encoder", "policy encoder embedding",
               "nearest base scene in the visual encoder of the task's Policy+DR policies"),
)
"""Every reference rule of AUDIT_SPEC, in table order."""

_BY_NAME = {rule.name: rule for rule in RULES}
if len(_BY_NAME) != len(RULES):
    _twice = sorted({rule.name for rule in RULES if [r.name for r in RULES].count(rule.name) > 1})
    raise InternalError(f"reference rules declared twice: {_twice}")


def get_rule(name: str) -> Rule:
    """The declared rule called `name` (`UnknownRuleError`, a ValueError, names the known ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownRuleError(f"rule must be one of {tuple(_BY_NAME)}, got {name!r}") from None


def rule_names(*families: Family) -> tuple[str, ...]:
    """Names of the rules of the given families (all rules when none is given), in table order."""
    return tuple(rule.name for rule in RULES if not families or rule.family in families)


def hindsight_rules() -> tuple[str, ...]:
    """The rules drawn as reference lines (random, oracle, best_fixed), in table order."""
    return tuple(rule.name for rule in RULES if rule.hindsight)


def display_name(name: str) -> str:
    """How the rule's row is called on the leaderboard."""
    return get_rule(name).display_name


def baseline_submission_id(setting_id: str, rule: str) -> str:
    """The published id of a reference rule's row: unique per (setting, rule), store-key safe."""
    return f"baseline-{get_rule(rule).name.replace('_', '-')}-{setting_id}"
