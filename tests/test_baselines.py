"""Reference rules as leaderboard rows: same audit path as submissions, random as expected value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from leaderboard.audit import run_audit
from leaderboard.baselines import (
    BASELINE_RULES,
    RANDOM_LABEL,
    RANDOM_REASON,
    audit_baselines,
    baseline_scores,
    baseline_submission_id,
)
from leaderboard.html_report import render_report_html
from leaderboard.matrix import MISSING, TransferData
from leaderboard.rules import REFERENCE_RULES
from tests.test_publish import make_data

COUNTS = {"n_shuffles": 200, "n_bootstrap": 200}


@pytest.fixture(scope="module")
def data() -> TransferData:
    return make_data(k=5, seed=11)


@pytest.fixture(scope="module")
def reports(data) -> dict[str, dict]:
    return audit_baselines(data, seed=3, **COUNTS)


def test_scores_for_every_rule_with_a_matrix(data):
    scores = baseline_scores(data)
    assert set(scores) == set(REFERENCE_RULES) == set(BASELINE_RULES) - {"random"}
    for name, (matrix, selection_only) in scores.items():
        assert matrix.shape == (5, data.scenes.n_scenes), name
        assert selection_only is REFERENCE_RULES[name].selection_only


def test_reports_in_table_order(reports):
    assert tuple(reports) == BASELINE_RULES


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
    with pytest.raises(ValueError, match=r"rule must be one of .* got 'dinov2'"):
        baseline_submission_id("stack-replay-k3-orig", "dinov2")


def test_scores_are_finite(data):
    for name, (matrix, _) in baseline_scores(data).items():
        assert np.isfinite(matrix).all(), name
