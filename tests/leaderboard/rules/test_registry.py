"""The rule registry: every reference rule declared once, and every list of rule names read from it."""

from __future__ import annotations

import pytest

from expaudit.errors import UnknownName
from leaderboard.findings import measure
from leaderboard.rules import baselines, simple
from leaderboard.rules.embeddings import ENCODER_NAMES
from leaderboard.rules.registry import (RULES, Family, UnknownRuleError, baseline_submission_id, display_name,
                                        get_rule, hindsight_rules, rule_names)
from leaderboard.site import standings, views
from leaderboard.site.build import LeaderboardEntry

PUBLISHED = ("random", "oracle", "best_fixed", "recency", "track_record", "object_proximity",
             "path_clearance", "raw32", "mobilenet_v2", "efficientnet_lite0", "resnet18", "dinov2",
             "clip", "policy_encoder")
"""The published rule names, in table order (frozen reports and row ids use them)."""


def test_every_published_rule_is_declared_once_in_table_order():
    assert rule_names() == PUBLISHED
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert rule_names(Family.OUTCOME) == PUBLISHED[:5]
    assert rule_names(Family.STRUCTURAL) == ("object_proximity", "path_clearance")
    assert rule_names(Family.EMBEDDING) == PUBLISHED[7:]
    assert rule_names(Family.STRUCTURAL, Family.EMBEDDING) == PUBLISHED[5:]


def test_the_embedding_family_is_the_set_of_encoders():
    assert rule_names(Family.EMBEDDING) == ENCODER_NAMES


def test_display_names_are_the_published_labels():
    assert display_name("random") == "random (expected value)"
    assert display_name("best_fixed") == "best-fixed (hindsight)"
    assert display_name("raw32") == "raw32 (32x32 pixels, L2)"
    assert display_name("policy_encoder") == "policy encoder embedding"
    assert len({rule.display_name for rule in RULES}) == len(RULES)


def test_scorers_belong_to_the_outcome_rules_with_a_score_matrix(audit_random_setting):
    data, _ = audit_random_setting
    scored = [rule for rule in RULES if rule.scores is not None]
    assert [rule.name for rule in scored] == ["oracle", "best_fixed", "recency", "track_record"]
    assert all(rule.family is Family.OUTCOME for rule in scored)
    for rule in scored:
        assert rule.scores(data).shape == data.outcomes.shape[:2]
    assert get_rule("random").scores is None and get_rule("random").selection_only
    assert not any(rule.needs_scenes for rule in RULES if rule.family is Family.OUTCOME)
    assert all(rule.needs_scenes for rule in RULES if rule.family is not Family.OUTCOME)


def test_an_unknown_name_is_a_user_error_naming_the_known_rules():
    with pytest.raises(UnknownRuleError, match=r"rule must be one of \('random', .*got 'nearest'"):
        get_rule("nearest")
    assert issubclass(UnknownRuleError, UnknownName) and issubclass(UnknownRuleError, ValueError)
    with pytest.raises(ValueError):
        baseline_submission_id("stack-replay-k3-orig", "nearest")


def test_row_ids_are_unchanged():
    assert baseline_submission_id("stack-replay-k50", "best_fixed") == "baseline-best-fixed-stack-replay-k50"
    assert baseline_submission_id("door-policy-k3-orig", "raw32") == "baseline-raw32-door-policy-k3-orig"


def test_the_baselines_and_findings_read_their_names_from_the_registry():
    assert baselines.OUTCOME_RULES == rule_names(Family.OUTCOME)
    assert baselines.STRUCTURAL_RULES == rule_names(Family.STRUCTURAL)
    assert baselines.EMBEDDING_RULES == rule_names(Family.EMBEDDING)
    assert baselines.BASELINE_RULES == PUBLISHED
    assert baselines.DISPLAY_NAMES == {rule.name: rule.display_name for rule in RULES}
    assert baselines.baseline_submission_id is baseline_submission_id
    assert set(simple.SCORED_RULES) == {"oracle", "best_fixed", "recency", "track_record"}
    assert all(simple.SCORED_RULES[name] is get_rule(name) for name in simple.SCORED_RULES)
    assert measure.VISUAL_RULES == rule_names(Family.EMBEDDING)
    assert measure.AUDITED_RULES == rule_names(Family.EMBEDDING) + rule_names(Family.STRUCTURAL)
    assert measure.OUTCOME_RULES == rule_names(Family.OUTCOME)


def test_the_sites_reference_lines_are_the_registrys_hindsight_rules():
    """The site may not import the rules (its own layer), so its copy is held to the registry here."""
    assert standings.REFERENCE_LINES == hindsight_rules() == ("random", "oracle", "best_fixed")
    assert set(standings.REFERENCE_LABELS) == set(hindsight_rules())
    for rule in rule_names():
        entry = LeaderboardEntry(submission_id=baseline_submission_id("stack-replay-k10-a", rule),
                                 setting_id="stack-replay-k10-a", display_name=display_name(rule),
                                 kind="baseline", submitted_at="", report={})
        assert views.reference_rule(entry) == (rule if get_rule(rule).hindsight else None)


def test_registry_rules_are_frozen():
    with pytest.raises(AttributeError):
        get_rule("oracle").name = "other"  # type: ignore[misc]
