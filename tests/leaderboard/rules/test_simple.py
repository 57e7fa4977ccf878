"""Reference rules without images: oracle, best_fixed, recency, track_record, random."""

import numpy as np
import pytest

from leaderboard.audit import run_audit
from leaderboard.rules.registry import RULES
from leaderboard.rules.simple import (
    best_fixed_scores,
    oracle_scores,
    random_row,
    recency_scores,
    track_record_scores,
)
from leaderboard.metrics.selection import select


def test_oracle_scores_reach_advantage_one(audit_random_setting):
    data, _ = audit_random_setting
    report = run_audit(data, oracle_scores(data), n_shuffles=50, n_bootstrap=50)
    assert report.reference.advantage == pytest.approx(1.0)
    assert report.reference.success_rule == pytest.approx(report.reference.success_oracle)


def test_best_fixed_and_recency_pick_one_experience(audit_random_setting):
    data, _ = audit_random_setting
    y = data.success_matrix()
    assert set(select(best_fixed_scores(data)).tolist()) == {int(np.argmax(y.mean(axis=1)))}
    assert set(select(recency_scores(data)).tolist()) == {len(data.experience_ids) - 1}
    report = run_audit(data, best_fixed_scores(data), selection_only=True, n_shuffles=50, n_bootstrap=50)
    assert report.reference.success_rule == pytest.approx(report.reference.success_best_fixed)


def test_track_record_hand_computed(audit_data_factory):
    outcomes = np.array(
        [
            [[0, 1], [1, 1], [1, 0]],  # e0
            [[1, 1], [1, 1], [1, 1]],  # e1
        ]
    )
    scores = track_record_scores(audit_data_factory(outcomes))
    # q0: tie 1/2, 1/2 -> e0, seed 0 -> fail: e0 = 1/3
    # q1: e1 (1/2 > 1/3), seed 1 -> success: e1 = 2/3
    # q2: e1 again
    np.testing.assert_allclose(scores, [[0.5, 1 / 3, 1 / 3], [0.5, 0.5, 2 / 3]])
    assert select(scores).tolist() == [0, 1, 1]


def test_track_record_observes_seed_q_mod_s(audit_data_factory):
    outcomes = np.zeros((2, 4, 3), dtype=np.int8)
    outcomes[0, 0, 0] = 1  # only the seed it observes at q = 0
    outcomes[0, 1, 2] = 1  # never observed: q = 1 observes seed 1
    scores = track_record_scores(audit_data_factory(outcomes))
    np.testing.assert_allclose(scores[0], [0.5, 2 / 3, 2 / 4, 2 / 5])


def test_track_record_rejects_incomplete_data(audit_data_factory):
    outcomes = np.zeros((2, 2, 1))
    outcomes[1, 1, 0] = -1
    with pytest.raises(ValueError, match="track_record needs a complete outcome tensor; 1 cells missing"):
        track_record_scores(audit_data_factory(outcomes))


def test_random_row_is_the_expected_value(audit_random_setting):
    data, _ = audit_random_setting
    row = random_row(data)
    y = data.success_matrix()
    assert row.success_rule == pytest.approx(y.mean())
    assert row.advantage == 0.0
    assert row.expected_selection_count == pytest.approx(y.shape[1] / y.shape[0])
    assert row.top_pick_share == pytest.approx(1 / y.shape[0])
    assert set(row.to_dict()) >= {"success_rule", "advantage", "concentration_ratio"}


def test_random_row_null_advantage_on_flat_library(audit_data_factory):
    row = random_row(audit_data_factory(np.ones((3, 4, 2))))
    assert row.advantage is None
    assert "below 0.05" in row.advantage_reason


def test_registry_lists_every_rule_with_a_score_matrix(audit_random_setting):
    data, _ = audit_random_setting
    scored = [rule for rule in RULES if rule.scores is not None]
    assert {rule.name for rule in scored} == {"oracle", "best_fixed", "recency", "track_record"}
    for rule in scored:
        scores = rule.scores(data)
        assert scores.shape == data.outcomes.shape[:2]
        assert np.isfinite(scores).all()
