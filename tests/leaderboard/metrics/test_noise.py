"""The noise-aware reference quantities (AUDIT_SPEC, "Noise-aware reference quantities")
against hand-computed small tensors, and the rule that reads them."""

from __future__ import annotations

import numpy as np
import pytest

from expaudit.errors import InvalidInput
from leaderboard.metrics import defaults
from leaderboard.metrics.discrimination import noise_discriminates, noise_shortfall
from leaderboard.metrics.noise import noise_aware, noise_null, oracle_cf_by_scene


def _tensor(rows) -> np.ndarray:
    """(K, Q, S) from a nested list [experience][scene][seed]."""
    return np.asarray(rows, dtype=np.int8)


def test_choosing_and_scoring_never_use_the_same_seed():
    # exp0 wins seed 0, exp1 wins seed 1: whoever the other seed picks fails the held-out one.
    outcomes = _tensor([[[1, 0]], [[0, 1]]])
    assert oracle_cf_by_scene(outcomes).tolist() == [0.0]
    result = noise_aware(outcomes, 10, np.random.default_rng(0))
    assert result.success_oracle_cf == 0.0
    assert result.headroom_cf == pytest.approx(-0.5)
    assert result.observed_gap == pytest.approx(0.0)


def test_ties_share_the_choice_evenly():
    # Held out s0: both have 1 on the other seeds -> tie, score mean(1, 1) = 1.
    # Held out s1: exp1 has 2 -> exp1 scores 0. Held out s2: exp0 has 2 -> exp0 scores 0.
    outcomes = _tensor([[[1, 1, 0]], [[1, 0, 1]]])
    assert oracle_cf_by_scene(outcomes) == pytest.approx([1.0 / 3.0])
    # A tie where the two tied experiences differ on the held-out seed scores their mean.
    outcomes = _tensor([[[1, 0, 1]], [[0, 1, 1]], [[0, 0, 0]]])
    # s0: others (0+1, 1+1, 0) -> exp1 scores 0; s1: others (1+1, 0+1, 0) -> exp0 scores 0;
    # s2: others (1, 1, 0) -> exp0 and exp1 tie, both score 1.
    assert oracle_cf_by_scene(outcomes) == pytest.approx([1.0 / 3.0])
    # Tied on the other seed but not on the held-out one: s0 ties (0, 0) and scores
    # mean(1, 0) = 0.5, never 1 or 0; s1 picks exp0 (1 > 0), which scores 0.
    outcomes = _tensor([[[1, 0]], [[0, 0]]])
    assert oracle_cf_by_scene(outcomes) == pytest.approx([0.25])
    assert oracle_cf_by_scene(outcomes[::-1]) == pytest.approx([0.25])


def test_a_seed_constant_tensor_cross_fits_to_the_plain_oracle():
    rng = np.random.default_rng(5)
    per_cell = (rng.random((4, 30)) < 0.5).astype(np.int8)
    outcomes = np.repeat(per_cell[:, :, None], 5, axis=2)
    y = outcomes.mean(axis=2)
    result = noise_aware(outcomes, 50, np.random.default_rng(0))
    assert result.success_oracle_cf == pytest.approx(y.max(axis=0).mean())
    assert result.headroom_cf == pytest.approx(result.observed_gap)


def test_interchangeable_experiences_have_no_cross_fitted_headroom():
    """Every experience draws from the scene's own rate: oracle - random is pure noise
    (about 0.16 at K = 3, S = 5) while headroom_cf stays near 0."""
    rng = np.random.default_rng(11)
    rate = rng.uniform(0.2, 0.9, 4000)
    outcomes = (rng.random((3, 4000, 5)) < rate[None, :, None]).astype(np.int8)
    result = noise_aware(outcomes, 200, np.random.default_rng(0))
    assert result.observed_gap > 0.12
    assert abs(result.headroom_cf) < 0.01
    assert result.null_p95 > 0.12


def test_a_real_per_scene_structure_has_headroom_and_beats_the_null():
    rng = np.random.default_rng(2)
    best = rng.integers(0, 3, 300)  # each scene has one experience that nearly always works
    rate = np.where(np.arange(3)[:, None] == best[None, :], 0.95, 0.3)
    outcomes = (rng.random((3, 300, 5)) < rate[:, :, None]).astype(np.int8)
    result = noise_aware(outcomes, 500, np.random.default_rng(0))
    assert result.headroom_cf > 0.3
    assert result.null_p_value == pytest.approx(1 / 501)
    assert result.observed_gap > result.null_p95


def test_the_null_matches_a_brute_force_draw_of_every_outcome():
    rng = np.random.default_rng(3)
    rate = rng.uniform(0.1, 0.9, 40)
    outcomes = (rng.random((3, 40, 5)) < rate[None, :, None]).astype(np.int8)
    fast = noise_null(outcomes, 3000, np.random.default_rng(1))
    p = outcomes.mean(axis=(0, 2))
    draw = np.random.default_rng(2)
    brute = []
    for _ in range(3000):
        y = (draw.random((3, 40, 5)) < p[None, :, None]).mean(axis=2)
        brute.append(y.max(axis=0).mean() - y.mean())
    brute = np.asarray(brute)
    assert fast.mean() == pytest.approx(brute.mean(), abs=0.003)
    assert fast.std() == pytest.approx(brute.std(), rel=0.1)
    assert np.percentile(fast, 95) == pytest.approx(np.percentile(brute, 95), abs=0.01)


def test_a_degenerate_null_gives_p_value_one():
    # Scenes that always or never succeed: the null is 0 everywhere and so is the observed gap.
    outcomes = np.zeros((3, 4, 5), dtype=np.int8)
    outcomes[:, :2, :] = 1
    result = noise_aware(outcomes, 99, np.random.default_rng(0))
    assert result.null_p95 == 0.0
    assert result.null_p_value == 1.0
    assert result.headroom_cf == 0.0


def test_the_null_is_seeded_and_its_draws_do_not_depend_on_earlier_counts():
    rng = np.random.default_rng(4)
    outcomes = (rng.random((5, 20, 5)) < 0.5).astype(np.int8)
    first = noise_null(outcomes, 100, np.random.default_rng(9))
    again = noise_null(outcomes, 100, np.random.default_rng(9))
    longer = noise_null(outcomes, 150, np.random.default_rng(9))
    assert np.array_equal(first, again)
    assert np.array_equal(first, longer[:100])


@pytest.mark.parametrize(("outcomes", "match"), [
    (np.zeros((2, 3), dtype=np.int8), r"\(K, Q, S\)"),
    (np.zeros((2, 3, 1), dtype=np.int8), "at least 2 seeds"),
    (np.full((2, 3, 2), 2, dtype=np.int8), "0/1"),
])
def test_bad_tensors_are_named(outcomes, match):
    with pytest.raises(InvalidInput, match=match):
        noise_aware(outcomes, 10, np.random.default_rng(0))


def test_bad_resample_counts_are_named():
    with pytest.raises(InvalidInput, match="n_resamples must be a positive integer"):
        noise_aware(np.zeros((2, 2, 2), dtype=np.int8), 0, np.random.default_rng(0))


@pytest.mark.parametrize(("random", "low", "verdict", "says"), [
    (0.5, 0.01, True, None),
    (0.5, 0.0, False, "starts at 0.000, not above 0"),
    (0.5, -0.02, False, "starts at -0.020"),
    (0.9, 0.05, False, "random success 0.900 is above 0.85"),
    (0.2, -0.01, False, "execution noise; random success 0.200 is below 0.30"),
    (0.5, None, False, "undefined"),
])
def test_the_rule_reads_the_interval_and_the_random_range(random, low, verdict, says):
    assert noise_discriminates(random, low) is verdict
    reason = noise_shortfall(random, low)
    assert (reason is None) if says is None else (says in reason)


def test_the_audit_report_carries_the_bracket_the_interval_and_both_labels(audit_data_factory):
    from leaderboard.audit import run_audit

    rng = np.random.default_rng(1)
    outcomes = (rng.random((4, 40, 5)) < rng.uniform(0.2, 0.9, (4, 40, 1))).astype(np.int8)
    data = audit_data_factory(outcomes, states=[f"st{j // 5}" for j in range(40)])
    scores = np.random.default_rng(0).random(data.outcomes.shape[:2])
    report = run_audit(data, scores, n_shuffles=50, n_bootstrap=200).to_dict()
    noise, interval = report["noise"], report["intervals"]["headroom_cf"]
    assert noise["oracle_bracket"][0] == noise["success_oracle_cf"] <= noise["oracle_bracket"][1]
    assert noise["oracle_bracket"][1] == report["reference"]["success_oracle"]
    assert interval["low"] <= noise["headroom_cf"] <= interval["high"]
    assert noise["n_null"] == defaults.N_NOISE_NULL
    assert noise["discriminates"] is noise_discriminates(report["reference"]["success_random"],
                                                         interval["low"])
    assert set(noise["paper_bar"]) >= {"discriminates", "reason", "min_gap"}


def test_a_single_seed_tensor_gives_null_noise_quantities_with_the_reason(audit_data_factory):
    from leaderboard.audit import run_audit

    data = audit_data_factory(np.eye(3, 6, dtype=np.int8))
    report = run_audit(data, np.ones((3, 6)), n_shuffles=20, n_bootstrap=50).to_dict()
    assert report["noise"]["headroom_cf"] is None
    assert report["noise"]["discriminates"] is None
    assert report["noise"]["reason"] == defaults.NOISE_ONE_SEED_REASON
    assert report["intervals"]["headroom_cf"]["low"] is None


def test_the_setting_label_equals_the_one_every_report_carries(audit_data_factory):
    from leaderboard.audit import run_audit
    from leaderboard.metrics.discrimination import setting_label

    rng = np.random.default_rng(8)
    outcomes = (rng.random((3, 60, 5)) < rng.uniform(0.2, 0.9, (3, 60, 1))).astype(np.int8)
    states = [f"st{j // 5}" for j in range(60)]
    data = audit_data_factory(outcomes, states=states)
    report = run_audit(data, rng.random((3, 60)), n_shuffles=30, n_bootstrap=300, seed=4).to_dict()
    label = setting_label(outcomes, np.asarray(states, dtype=object), n_bootstrap=300, seed=4)
    interval = report["intervals"]["headroom_cf"]
    assert (round(label.headroom_cf.low, 6), round(label.headroom_cf.high, 6)) == (interval["low"], interval["high"])
    assert round(label.noise.null_p_value, 6) == report["noise"]["null_p_value"]
    assert label.discriminates is report["noise"]["discriminates"]
    assert label.paper_discriminates is report["noise"]["paper_bar"]["discriminates"]
