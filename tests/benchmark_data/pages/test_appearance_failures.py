"""Intervals of the appearance-caused failure share: resampled by physical state, paired across settings."""

import numpy as np
import pytest

from benchmark_data.pages.appearance_failures import (appearance_failure_share, appearance_share_difference,
                                                      noise_floor_share)
from expaudit.errors import InvalidInput
from leaderboard.metrics.bootstrap import percentile_interval, resample_counts


def _scenes(n_states: int, n_draws: int = 5):
    """State ids and draws of `n_states` states x `n_draws` renders, state-major."""
    states = np.repeat([f"s{i:02d}" for i in range(n_states)], n_draws)
    draws = np.tile(np.arange(n_draws), n_states)
    return states, draws


def _random_tensor(rng, k, n_states, n_seeds, p=0.6):
    return (rng.random((k, n_states * 5, n_seeds)) < p).astype(np.int8)


def _reference_share_interval(y, states, draws, seeds, n_bootstrap, seed):
    """Slow reference: loop over resamples, rebuild the scene set from the drawn states."""
    names = sorted(set(states))
    weights = resample_counts(len(names), n_bootstrap, np.random.default_rng(seed))
    shares = []
    for w in weights:
        failures = caused = 0
        for name, count in zip(names, w):
            scenes = np.flatnonzero(states == name)
            nominal = scenes[draws[scenes] == 0][0]
            for q in scenes[draws[scenes] >= 1]:
                for s in seeds:
                    fail = y[:, q, s] == 0
                    failures += count * fail.sum()
                    caused += count * (fail & (y[:, nominal, s] == 1)).sum()
        shares.append(np.nan if failures == 0 else caused / failures)
    return percentile_interval(np.array(shares), "share")


def test_share_interval_equals_a_loop_over_resampled_states():
    rng = np.random.default_rng(3)
    states, draws = _scenes(6)
    y = _random_tensor(rng, 3, 6, 2)
    got = appearance_failure_share(y, states, draws, seeds=[0, 1], n_bootstrap=300, seed=7)
    want = _reference_share_interval(y, states, draws, [0, 1], 300, 7)
    assert (got.n_states, got.n_bootstrap, got.rng_seed) == (6, 300, 7)
    assert got.interval.low == pytest.approx(want.low) and got.interval.high == pytest.approx(want.high)
    assert got.interval.low <= got.share <= got.interval.high


def test_identical_states_give_a_point_interval_and_differing_states_a_wide_one():
    states, draws = _scenes(10)
    one_state = [1, 0, 0, 1, 1]  # draws 1, 2 fail with draw 0 ok: share 1 in every state
    y = np.array(one_state * 10, dtype=np.int8)[None, :, None]
    same = appearance_failure_share(y, states, draws, seeds=[0])
    assert same.share == 1.0 and (same.interval.low, same.interval.high) == (1.0, 1.0)
    # half of the states fail on draw 0 too, so their failures are not caused by appearance
    other = [0, 0, 0, 1, 1]
    y2 = np.array((one_state + other) * 5, dtype=np.int8)[None, :, None]
    mixed = appearance_failure_share(y2, states, draws, seeds=[0])
    assert mixed.share == pytest.approx(0.5)
    assert mixed.interval.low < 0.4 and mixed.interval.high > 0.6


def test_no_failure_gives_no_interval():
    states, draws = _scenes(3)
    y = np.ones((2, 15, 1), dtype=np.int8)
    share = appearance_failure_share(y, states, draws, seeds=[0])
    assert share.share is None and share.interval is None


def test_difference_of_a_setting_with_itself_is_exactly_zero_because_it_is_paired():
    rng = np.random.default_rng(0)
    states, draws = _scenes(8)
    y = _random_tensor(rng, 3, 8, 2)
    diff = appearance_share_difference(y, y.copy(), states, draws, seeds=[0, 1], n_bootstrap=200)
    assert diff.difference == 0.0 and (diff.interval.low, diff.interval.high) == (0.0, 0.0)


def test_difference_is_policy_minus_policy_dr_with_the_same_resamples():
    rng = np.random.default_rng(1)
    states, draws = _scenes(8)
    policy, policy_dr = _random_tensor(rng, 3, 8, 2, 0.5), _random_tensor(rng, 3, 8, 2, 0.8)
    diff = appearance_share_difference(policy, policy_dr, states, draws, seeds=[0, 1],
                                       n_bootstrap=300, seed=5)
    a = appearance_failure_share(policy, states, draws, seeds=[0, 1])
    b = appearance_failure_share(policy_dr, states, draws, seeds=[0, 1])
    assert diff.difference == pytest.approx(a.share - b.share)
    # the paired interval: one loop computing both shares on each drawn multiset of states
    names = sorted(set(states))
    weights = resample_counts(len(names), 300, np.random.default_rng(5))
    values = []
    for w in weights:
        shares = []
        for y in (policy, policy_dr):
            f = c = 0
            for name, count in zip(names, w):
                scenes = np.flatnonzero(states == name)
                nominal = scenes[draws[scenes] == 0][0]
                for q in scenes[draws[scenes] >= 1]:
                    fail = y[:, q, :] == 0
                    f += count * fail.sum()
                    c += count * (fail & (y[:, nominal, :] == 1)).sum()
            shares.append(c / f)
        values.append(shares[0] - shares[1])
    want = percentile_interval(np.array(values), "share difference")
    assert diff.interval.low == pytest.approx(want.low) and diff.interval.high == pytest.approx(want.high)


def test_difference_rejects_incomplete_seeds_and_other_scene_counts():
    states, draws = _scenes(3)
    y = np.ones((2, 15, 2), dtype=np.int8)
    y_missing = y.copy()
    y_missing[0, 0, 1] = -1
    with pytest.raises(InvalidInput, match="seed 1 has MISSING cells"):
        appearance_share_difference(y, y_missing, states, draws, seeds=[0, 1])
    with pytest.raises(InvalidInput, match=r"must have shape \(10,\) like the scenes of policy_dr"):
        appearance_share_difference(y, y[:, :10], states, draws, seeds=[0])
    with pytest.raises(InvalidInput, match="names a seed twice"):
        appearance_share_difference(y, y, states, draws, seeds=[0, 0])
    with pytest.raises(InvalidInput, match="n_bootstrap must be at least 1"):
        appearance_failure_share(y, states, draws, seeds=[0], n_bootstrap=0)
    assert appearance_share_difference(y, y, states, draws, seeds=[0]).difference is None


# ------------------------------------------------------------------ the execution-noise floor


def _reference_floor(y, states, draws, seeds, n_bootstrap, seed):
    """Slow reference: every (draw-0 failure, other seed) pair, looped, over resampled states."""
    names = sorted(set(states))
    def totals(counts):
        pairs = wins = 0
        for name, count in zip(names, counts):
            q = [q for q in np.flatnonzero(states == name) if draws[q] == 0][0]
            for i in range(y.shape[0]):
                for s in seeds:
                    for other in seeds:
                        if other != s and y[i, q, s] == 0:
                            pairs += count
                            wins += count * (y[i, q, other] == 1)
        return pairs, wins
    point = totals(np.ones(len(names), dtype=int))
    weights = resample_counts(len(names), n_bootstrap, np.random.default_rng(seed))
    shares = [w / p if p else np.nan for p, w in map(totals, weights)]
    return point, percentile_interval(np.array(shares), "noise floor")


def test_noise_floor_equals_a_loop_over_failure_and_other_seed_pairs():
    rng = np.random.default_rng(11)
    states, draws = _scenes(6)
    y = _random_tensor(rng, 3, 6, 3, 0.5)
    got = noise_floor_share(y, states, draws, seeds=[0, 2, 1], n_bootstrap=200, seed=4)
    (pairs, wins), want = _reference_floor(y, states, draws, [0, 2, 1], 200, 4)
    assert (got.failure_pairs, got.twin_successes) == (pairs, wins) and pairs > 0
    assert got.share == pytest.approx(wins / pairs)
    assert got.interval.low == pytest.approx(want.low) and got.interval.high == pytest.approx(want.high)


def test_without_an_appearance_effect_the_share_sits_at_the_noise_floor_and_with_one_above():
    """Every render of a state succeeds with the state's own probability: appearance changes
    nothing, so the share of perturbed failures with a succeeding twin is the floor (about
    0.39 here). Then draws 1-4 fail outright in half the cases: the share rises towards
    the states' mean success (0.5), clear of the floor's interval."""
    rng = np.random.default_rng(2)
    n_states, k, n_seeds = 200, 3, 5
    states, draws = _scenes(n_states)
    p = rng.uniform(0.1, 0.9, size=(k, n_states))
    y = (rng.random((k, n_states * 5, n_seeds)) < np.repeat(p, 5, axis=1)[:, :, None]).astype(np.int8)
    seeds = list(range(n_seeds))
    floor = noise_floor_share(y, states, draws, seeds, n_bootstrap=200)
    share = appearance_failure_share(y, states, draws, seeds, n_bootstrap=200)
    assert abs(share.share - floor.share) < 0.03
    hit = y.copy()
    hit[:, draws >= 1, :] *= (rng.random((k, int((draws >= 1).sum()), n_seeds)) < 0.5).astype(np.int8)
    raised = appearance_failure_share(hit, states, draws, seeds, n_bootstrap=200)
    assert raised.share > floor.share + 0.05 and raised.interval.low > floor.interval.high
    assert noise_floor_share(hit, states, draws, seeds).share == floor.share  # draw 0 untouched


def test_noise_floor_needs_two_seeds_and_a_nominal_failure():
    states, draws = _scenes(3)
    y = np.zeros((2, 15, 2), dtype=np.int8)
    assert noise_floor_share(y, states, draws, seeds=[0]).share is None
    assert noise_floor_share(y, states, draws, seeds=[0, 1]).share == 0.0
    assert noise_floor_share(np.ones_like(y), states, draws, seeds=[0, 1]).share is None
    with pytest.raises(InvalidInput, match="state 's01' has no draw-0 scene"):
        noise_floor_share(y, states, np.where(states == "s01", 1, draws), seeds=[0, 1])
