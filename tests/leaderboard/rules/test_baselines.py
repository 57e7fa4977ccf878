"""Reference rules as leaderboard rows: same audit path as submissions, random as expected value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmark_data.frozen import load_transfer
from benchmark_data.registry import get_setting
from leaderboard.audit import run_audit
from leaderboard.rules.baselines import (
    BASELINE_RULES,
    EMBEDDING_RULES,
    OUTCOME_RULES,
    RANDOM_LABEL,
    RANDOM_REASON,
    SCENE_RULES,
    NotComputedRule,
    audit_baselines,
    audit_scene_rules,
    baseline_scores,
    baseline_submission_id,
    embedding_rule_scores,
    scene_rule_scores,
)
from leaderboard.site.html_report import render_report_html
from leaderboard.matrix import MISSING, TransferData
from leaderboard.rules.registry import get_rule
from tests.support.site_data import make_data, synthetic_scene_scores

COUNTS = {"n_shuffles": 200, "n_bootstrap": 200}


@pytest.fixture(scope="module")
def data() -> TransferData:
    return make_data(k=5, seed=11)


@pytest.fixture(scope="module")
def reports(data) -> dict[str, dict]:
    return audit_baselines(data, seed=3, **COUNTS)


def test_scores_for_every_rule_with_a_matrix(data):
    scores = baseline_scores(data)
    assert set(scores) == set(OUTCOME_RULES) - {"random"}
    for name, (matrix, selection_only) in scores.items():
        assert matrix.shape == (5, data.scenes.n_scenes), name
        assert selection_only is get_rule(name).selection_only


def test_reports_in_table_order(reports):
    assert tuple(reports) == OUTCOME_RULES


def test_rules_go_through_the_submission_audit_path(data, reports):
    for name, (scores, selection_only) in baseline_scores(data).items():
        direct = run_audit(data, scores, selection_only=selection_only, seed=3, **COUNTS)
        assert reports[name] == direct.to_dict(), name


def test_reference_values(data, reports):
    y = data.success_matrix()
    quality = y.mean(axis=1)
    assert reports["oracle"]["reference"]["success_rule"] == pytest.approx(y.max(axis=0).mean())
    assert reports["oracle"]["reference"]["advantage"] == pytest.approx(1.0)
    assert reports["best_fixed"]["reference"]["success_rule"] == pytest.approx(quality.max())
    recency = reports["recency"]["concentration"]
    assert recency["top_pick"] == data.experience_ids[-1] and recency["top_pick_share"] == 1.0


def test_random_row_is_the_expected_value(data, reports):
    y = data.success_matrix()
    random = reports["random"]
    assert random["reference"]["success_rule"] == pytest.approx(y.mean(), abs=1e-6)
    assert random["reference"]["advantage"] == pytest.approx(0.0, abs=1e-6)
    conc = random["concentration"]
    assert list(conc["selection_counts"].values()) == [pytest.approx(data.scenes.n_scenes / 5)] * 5
    assert conc["top_pick_share"] == pytest.approx(0.2)
    assert conc["concentration_ratio"] == pytest.approx(0.2 / conc["oracle_top_pick_share"], abs=1e-5)
    # library-level blocks are the data's, shared with every other rule
    for key in ("success_random", "success_oracle", "best_fixed", "headroom", "quality"):
        assert random["reference"][key] == reports["oracle"]["reference"][key]
    assert random["verdict"]["label"] == RANDOM_LABEL


def test_random_row_nulls_carry_the_reason(reports):
    random = reports["random"]
    assert all(block["gap"] is None and block["reason"] == RANDOM_REASON
               for block in random["gap"].values())
    for name, block in random["intervals"].items():
        if name == "success_best_fixed":  # a property of the library, shared by every rule
            assert block == reports["oracle"]["intervals"][name] and block["low"] is not None
        else:
            assert block["low"] is None and block["reason"] == RANDOM_REASON, name
    assert random["ranking"]["within_query_auroc"] is None
    assert random["ranking"]["not_computable_reason"] == RANDOM_REASON
    assert random["selection"] is None


def test_random_report_is_json_and_renders(reports):
    text = json.dumps(reports["random"], allow_nan=False)
    page = render_report_html(json.loads(text))
    assert RANDOM_LABEL in page and "<svg" in page


def test_same_seed_same_reports(data, reports):
    assert audit_baselines(data, seed=3, **COUNTS) == reports


def test_incomplete_tensor_is_rejected(data):
    outcomes = data.outcomes.copy()
    outcomes[0, 0, 0] = MISSING
    partial = TransferData(data.experience_ids, data.scenes, outcomes)
    with pytest.raises(ValueError, match=r"data: the outcome tensor has 1 missing cells"):
        baseline_scores(partial)


def test_submission_ids():
    assert baseline_submission_id("stack-replay-k3-orig", "track_record") == \
        "baseline-track-record-stack-replay-k3-orig"
    assert baseline_submission_id("stack-replay-k50", "dinov2") == "baseline-dinov2-stack-replay-k50"
    with pytest.raises(ValueError, match=r"rule must be one of .* got 'nearest'"):
        baseline_submission_id("stack-replay-k3-orig", "nearest")


def test_scores_are_finite(data):
    for name, (matrix, _) in baseline_scores(data).items():
        assert np.isfinite(matrix).all(), name


# ------------------------------------------------ structural and embedding rules --

def test_every_reference_rule_of_the_spec_is_a_baseline():
    assert BASELINE_RULES == (
        "random", "oracle", "best_fixed", "recency", "track_record", "object_proximity",
        "path_clearance", "raw32", "mobilenet_v2", "efficientnet_lite0", "resnet18", "dinov2",
        "clip", "policy_encoder")


@pytest.fixture(scope="module")
def all_reports(data) -> dict:
    return audit_baselines(data, synthetic_scene_scores(data), seed=3, **COUNTS)


def test_rows_for_every_rule_in_table_order(all_reports):
    assert tuple(all_reports) == BASELINE_RULES


def test_structural_rules_go_through_the_submission_audit_path(data, all_reports, reports):
    scores = synthetic_scene_scores(data)
    for name in ("object_proximity", "path_clearance"):
        direct = run_audit(data, scores[name], selection_only=False, seed=3, **COUNTS)
        assert all_reports[name] == direct.to_dict(), name
        assert all_reports[name]["reference"]["success_rule"] is not None
    for name in OUTCOME_RULES:  # scene scores do not change the outcome rules
        assert all_reports[name] == reports[name]


def test_rule_without_scores_is_not_computed_with_its_reason(all_reports):
    for name in EMBEDDING_RULES:
        row = all_reports[name]
        assert isinstance(row, NotComputedRule) and row.rule == name
        assert row.message == "not computed: weights missing: synthetic setting has no images"


def test_missing_weights_path_makes_the_row_say_why(data, tmp_path):
    absent = tmp_path / "resnet18-absent.pth"
    scores = embedding_rule_scores(None, data, names=("resnet18", "policy_encoder"),
                                   weights={"resnet18": absent}, environ={})
    assert scores["resnet18"].startswith("weights missing: ")
    assert "resnet18-absent.pth' is not a file" in scores["resnet18"]
    assert scores["policy_encoder"].startswith("weights missing: the Policy+DR")
    rows = audit_scene_rules(data, scores, **COUNTS)
    assert rows["resnet18"] == NotComputedRule("resnet18", scores["resnet18"])
    assert rows["resnet18"].message.startswith("not computed: weights missing")


def test_user_weight_rules_without_weights_are_not_computed(data):
    scores = embedding_rule_scores(None, data, names=("resnet18", "dinov2", "clip"), environ={})
    for name in ("resnet18", "dinov2", "clip"):
        assert scores[name].startswith("weights missing: set EXPAUDIT_"), name


@pytest.mark.parametrize(("call", "message"), [
    (lambda d: embedding_rule_scores(None, d, names=("oracle",)),
     r"names: \['oracle'\] are not embedding rules"),
    (lambda d: scene_rule_scores(None, d, names=("recency",)),
     r"names: \['recency'\] are not scene rules"),
    (lambda d: audit_scene_rules(d, {"nearest": np.zeros((5, 200))}),
     r"scores: \['nearest'\] are not scene rules"),
])
def test_unknown_rule_names_are_rejected(data, call, message):
    with pytest.raises(ValueError, match=message):
        call(data)


def test_not_computed_rule_is_validated():
    with pytest.raises(ValueError, match=r"rule must be one of .* got 'nearest'"):
        NotComputedRule("nearest", "weights missing")
    with pytest.raises(ValueError, match=r"rule 'clip': field 'reason' must say why"):
        NotComputedRule("clip", " ")


def test_scene_rules_on_a_frozen_setting(tmp_path):
    """The structural rules and raw32 on the frozen k3 setting; raw32 is cached."""
    setting = get_setting("stack-replay-k3-orig")
    frozen = load_transfer(setting.id)
    names = ("object_proximity", "path_clearance", "raw32")
    first = scene_rule_scores(setting, frozen, cache_dir=tmp_path, names=names)
    assert tuple(first) == names
    for name in names:
        assert first[name].shape == (3, frozen.scenes.n_scenes) and np.isfinite(first[name]).all()
    assert any(tmp_path.rglob("*.npy"))
    again = scene_rule_scores(setting, frozen, cache_dir=tmp_path, names=("raw32",))
    np.testing.assert_array_equal(again["raw32"], first["raw32"])
    assert set(SCENE_RULES) >= set(names)
