"""run_audit end to end: report layout, determinism, selection-only input, verdicts, errors."""

import json

import numpy as np
import pytest

from leaderboard.metrics import defaults
from leaderboard.audit import run_audit
from leaderboard.rules.simple import oracle_scores

Y_OUTCOMES = np.array(
    [  # 5 seeds reproduce the reference example y exactly
        [[1] * 5, [0] * 5, [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]],
        [[0] * 5, [1] * 5, [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]],
        [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0] * 5, [1, 0, 0, 0, 0]],
    ]
)
SCORES = np.array([[3.0, 2.0, 1.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0]])

GROUP_KEYS = {
    "inputs": {
        "n_experiences",
        "n_scenes",
        "n_seeds",
        "experience_ids",
        "selection_only",
        "seed",
        "n_shuffles",
        "n_bootstrap",
    },
    "reference": {
        "success_rule",
        "success_random",
        "success_oracle",
        "best_fixed",
        "success_best_fixed",
        "headroom",
        "advantage",
        "advantage_reason",
        "best_fixed_advantage",
        "quality",
        "margin",
    },
    "concentration": {
        "selection_counts",
        "oracle_counts",
        "top_pick",
        "top_pick_share",
        "oracle_top_pick_share",
        "concentration_ratio",
        "top_pick_margin",
        "sign_match",
    },
    "intervals": {"success_rule", "advantage", "success_best_fixed", "gap", "within_query_auroc"},
    "ranking": {
        "pooled_auroc",
        "within_query_auroc",
        "within_query_eligible_share",
        "r2_scene",
        "not_computable_reason",
    },
    "diagnostics": {"delete_top_pick", "equalized_library", "random_sublibraries", "reranking"},
    "verdict": {"label", "text"},
}
GAP_KEYS = {"gap", "shuffle_mean", "gap_envelope", "gap_significant", "direction", "n_scenes"}


def _small(audit_data_factory):
    states = ["a", "a", "b", "c"]
    return audit_data_factory(Y_OUTCOMES, states=states, layout=[0, 0, 1, 2], draws=[0, 1, 0, 0])


def test_report_has_the_documented_layout(audit_random_setting):
    data, scores = audit_random_setting
    report = run_audit(data, scores, n_shuffles=100, n_bootstrap=100).to_dict()
    assert report["schema_version"] == defaults.SCHEMA_VERSION
    for group, keys in GROUP_KEYS.items():
        assert keys <= set(report[group]), group
    assert set(report["gap"]) == {"all", "appearance", "layout"}
    for block in report["gap"].values():
        assert GAP_KEYS <= set(block)
    assert set(report["diagnostics"]["reranking"]) == {"csls", "mutual_proximity"}
    for interval in report["intervals"].values():
        assert {"low", "high", "reason"} <= set(interval)
    json.dumps(report, allow_nan=False)


def test_small_case_matches_hand_computation(audit_data_factory):
    report = run_audit(_small(audit_data_factory), SCORES, n_shuffles=200, n_bootstrap=200).to_dict()
    ref, conc = report["reference"], report["concentration"]
    assert ref["success_rule"] == 0.45
    assert ref["success_random"] == round(4.6 / 12, 6)
    assert ref["success_oracle"] == 0.7
    assert ref["best_fixed"] == "e0"
    assert ref["advantage"] == round(4 / 19, 6)
    assert ref["quality"] == {"e0": 0.45, "e1": 0.45, "e2": 0.25}
    assert conc["selection_counts"] == {"e0": 3, "e1": 0, "e2": 1}
    assert conc["oracle_counts"] == {"e0": round(11 / 6, 6), "e1": round(11 / 6, 6), "e2": round(1 / 3, 6)}
    assert conc["concentration_ratio"] == round(18 / 11, 6)
    assert report["gap"]["appearance"]["n_scenes"] == 2
    assert report["gap"]["layout"]["n_scenes"] == 2
    assert report["inputs"]["n_states"] == 3
    assert report["selection"] == {"s0": "e0", "s1": "e0", "s2": "e0", "s3": "e2"}
    assert report["verdict"]["label"] == "one good experience"
    assert report["diagnostics"]["delete_top_pick"]["removed"] == "e0"
    assert report["diagnostics"]["delete_top_pick"]["advantage"] == 0.5


def test_same_seed_same_bytes_other_seed_other_draws(audit_random_setting):
    data, scores = audit_random_setting

    def dump(seed):
        return json.dumps(
            run_audit(data, scores, n_shuffles=300, n_bootstrap=300, seed=seed).to_dict(), sort_keys=True
        )

    assert dump(3) == dump(3)
    assert dump(3) != dump(4)


def test_oracle_scores_give_advantage_one_and_per_scene_skill(audit_random_setting):
    data, _ = audit_random_setting
    report = run_audit(data, oracle_scores(data), n_shuffles=200, n_bootstrap=200).to_dict()
    assert report["reference"]["advantage"] == 1.0
    assert report["ranking"]["within_query_auroc"] == 1.0
    if report["concentration"]["concentration_ratio"] <= 1.5:
        assert report["verdict"]["label"] == "per-scene skill"


def test_scene_blind_rule_gap_envelope_contains_zero(audit_random_setting):
    data, _ = audit_random_setting
    scores = np.tile(np.arange(len(data.experience_ids))[:, None] % 3, (1, data.scenes.n_scenes)).astype(
        float
    )
    report = run_audit(data, scores, n_shuffles=200, n_bootstrap=200).to_dict()
    for block in report["gap"].values():
        if block["gap"] is not None:
            low, high = block["gap_envelope"]
            assert low <= 0.0 <= high
            assert block["gap_significant"] is False


def test_selection_only_reports_ranking_as_not_computable(audit_random_setting):
    data, scores = audit_random_setting
    picks = np.argmax(scores, axis=0)
    one_hot = np.zeros_like(scores)
    one_hot[picks, np.arange(scores.shape[1])] = 1.0
    report = run_audit(data, one_hot, selection_only=True, n_shuffles=100, n_bootstrap=100).to_dict()
    ranking = report["ranking"]
    assert ranking["pooled_auroc"] is None and ranking["within_query_auroc"] is None
    assert ranking["not_computable_reason"].startswith("selection-only input")
    assert ranking["r2_scene"] is not None  # needs no scores
    assert report["intervals"]["within_query_auroc"]["low"] is None
    assert report["diagnostics"]["reranking"]["csls"]["reason"].startswith("selection-only input")
    assert report["diagnostics"]["random_sublibraries"]["reason"].startswith("selection-only input")
    full = run_audit(data, scores, n_shuffles=100, n_bootstrap=100).to_dict()
    assert report["concentration"] == full["concentration"]
    assert report["reference"] == full["reference"]


def test_flat_library_gives_null_advantage_with_reason(audit_data_factory):
    data = audit_data_factory(np.ones((3, 6, 2)), states=["a", "a", "b", "b", "c", "c"])
    report = run_audit(data, np.random.default_rng(0).random((3, 6)), n_shuffles=50, n_bootstrap=50).to_dict()
    assert report["reference"]["advantage"] is None
    assert "oracle - random = 0.0000 is below 0.05" in report["reference"]["advantage_reason"]
    assert report["intervals"]["advantage"]["low"] is None
    assert report["intervals"]["advantage"]["reason"].startswith("advantage is null:")
    assert report["concentration"]["sign_match"] is None


def test_wrong_scene_assignment_verdict(audit_data_factory):
    outcomes = np.zeros((2, 20, 1))
    outcomes[0, :10] = 1
    outcomes[1, 10:] = 1
    data = audit_data_factory(outcomes)
    reversed_scores = np.zeros((2, 20))
    reversed_scores[1, :10] = 1
    reversed_scores[0, 10:] = 1
    report = run_audit(data, reversed_scores, n_shuffles=500, n_bootstrap=100).to_dict()
    assert report["gap"]["all"]["direction"] == "below"
    assert report["verdict"]["label"] == "wrong-scene assignment"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scores": np.zeros((2, 2))}, r"scores: shape \(2, 2\) does not match \(K, Q\) = \(3, 4\)"),
        ({"scores": np.where(np.eye(3, 4) > 0, np.nan, 0.0)}, "scores: 3 entries are NaN or infinite"),
        ({"n_shuffles": 0}, "n_shuffles must be a positive integer, got 0"),
        ({"n_bootstrap": 2.5}, "n_bootstrap must be a positive integer, got 2.5"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
    ],
)
def test_bad_arguments_are_rejected(audit_data_factory, kwargs, message):
    arguments = {"scores": SCORES, **kwargs}
    with pytest.raises(ValueError, match=message):
        run_audit(_small(audit_data_factory), **arguments)


def test_incomplete_data_is_rejected(audit_data_factory):
    outcomes = Y_OUTCOMES.copy()
    outcomes[0, 0, 0] = -1
    with pytest.raises(ValueError, match="data: the outcome tensor has 1 missing cells"):
        run_audit(audit_data_factory(outcomes), SCORES)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 4, 2), (3, 1, 1), (2, 2, 1)])
def test_degenerate_sizes_give_nulls_with_reasons_not_crashes(audit_data_factory, shape):
    outcomes = (np.arange(np.prod(shape)).reshape(shape) % 2).astype(np.int8)
    report = run_audit(audit_data_factory(outcomes), np.zeros(shape[:2]), n_shuffles=20, n_bootstrap=20)
    document = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert document["verdict"]["label"] in {
        "per-scene skill",
        "one good experience",
        "wrong-scene assignment",
        "not distinguishable",
    }
    if shape[1] == 1:
        assert document["gap"]["all"]["gap"] is None
        assert document["gap"]["all"]["reason"] == "1 scene(s) in this subset: a shuffle needs at least 2"
    if shape[0] == 1:
        assert document["diagnostics"]["delete_top_pick"]["reason"].startswith(
            "the library has one experience"
        )
