"""The advantage's bootstrap interval leaves out resamples whose denominator is below 0.05.

AUDIT_SPEC: `advantage = (S - success_random) / (success_oracle - success_random)`,
null when the denominator is below 0.05; its interval is the percentile interval
of the cluster bootstrap over states, over the resamples that define it, and
the report counts the others (`n_undefined`). When `success_oracle -
success_random` is near 0.06, a fair share of resamples fall below the
threshold; dropping the threshold (`> 0`) keeps them and widens the interval
with ratios of near-zero denominators.

Both references here are independent of `leaderboard.metrics`: their own
resampling (an exact enumeration of every resample, and a loop that draws
states with replacement from its own generator) and their own threshold
written from the spec. The audit is called only through `run_audit` and its
published report, so the comparison holds for any implementation that
resamples states uniformly with replacement; it does not assume this one's
random draws, and each tolerance is five standard errors of the Monte-Carlo
error of the audit's own 2,000 resamples.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest

from leaderboard.audit import run_audit

SPEC_MIN_DENOMINATOR = Fraction(1, 20)
"""AUDIT_SPEC, Reference quantities: advantage is null when its denominator is below 0.05."""
N_BOOTSTRAP = 2000
"""AUDIT_SPEC, Intervals: 2,000 resamples by default."""
TAIL = 0.025
"""AUDIT_SPEC, Intervals: percentile 95% intervals."""
TOLERANCE_SE = 5.0


def _published_advantage_interval(data, scores, seed: int = 0) -> dict:
    report = run_audit(data, scores, n_shuffles=100, n_bootstrap=N_BOOTSTRAP, seed=seed).to_dict()
    return report["intervals"]["advantage"]


def _quantile(values: np.ndarray, weights: np.ndarray, level: float) -> float:
    """Smallest value whose cumulative weight share reaches `level` (clipped to [0, 1])."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order]) / weights.sum()
    position = np.searchsorted(cumulative, min(max(level, 0.0), 1.0) - 1e-12)
    return float(values[order][min(position, len(values) - 1)])


def _bracket(values, weights, level: float, n_defined: float) -> tuple[float, float]:
    """Where a percentile of `n_defined` draws from this distribution lies (five standard errors)."""
    spread = TOLERANCE_SE * np.sqrt(level * (1 - level) / n_defined)
    return _quantile(values, weights, level - spread), _quantile(values, weights, level + spread)


# ------------------------------------------------------------------ an exactly solvable setting

K, N_STATES = 5, 40
HIT = [1, 0, 0, 0, 0]
"""The rule's pick (experience 0) alone succeeds: rule - random = 0.8, oracle - random = 0.8."""
MISS = [0, 1, 1, 1, 1]
"""Every other experience succeeds: rule - random = -0.8, oracle - random = 0.2."""
ALL = [1, 1, 1, 1, 1]
"""Everyone succeeds: the state adds nothing to either difference."""
N_HIT, N_MISS = 3, 1
"""success_oracle - success_random = (3 x 0.8 + 1 x 0.2) / 40 = 0.065; advantage 1.6 / 2.6."""


def _setting(audit_data_factory, n_hit: int = N_HIT, n_miss: int = N_MISS):
    """40 states (one scene each, one seed): HIT, MISS, the rest ALL; the rule always picks 0."""
    columns = [HIT] * n_hit + [MISS] * n_miss + [ALL] * (N_STATES - n_hit - n_miss)
    data = audit_data_factory(np.array(columns, dtype=np.int8).T)
    scores = np.tile(np.arange(K, 0, -1, dtype=float)[:, None], (1, N_STATES))
    return data, scores


@pytest.fixture
def near_threshold(audit_data_factory):
    return _setting(audit_data_factory)


def _exact_resample_distribution(threshold: Fraction, n_hit: int = N_HIT, n_miss: int = N_MISS):
    """Every resample outcome: a resample draws 40 states with replacement, so it holds `a`
    HIT and `b` MISS states with multinomial probability; (advantage, probability) of the
    defined ones and the probability of an undefined one."""
    p_hit, p_miss = n_hit / N_STATES, n_miss / N_STATES
    values, weights, undefined = [], [], 0.0
    for a in range(N_STATES + 1):
        for b in range(N_STATES + 1 - a):
            rest = N_STATES - a - b
            probability = (comb(N_STATES, a) * comb(N_STATES - a, b)
                           * p_hit ** a * p_miss ** b * (1 - p_hit - p_miss) ** rest)
            numerator, denominator = 4 * a - 4 * b, 4 * a + b  # x 5 N_STATES, in integers
            if denominator > 0 and Fraction(denominator, 5 * N_STATES) >= threshold:
                values.append(numerator / denominator)
                weights.append(probability)
            else:
                undefined += probability
    return np.array(values), np.array(weights), undefined


def _assert_matches(interval: dict, values, weights, undefined: float) -> None:
    expected = N_BOOTSTRAP * undefined
    spread = TOLERANCE_SE * np.sqrt(N_BOOTSTRAP * undefined * (1 - undefined))
    assert abs(interval["n_undefined"] - expected) <= spread, (
        f"{interval['n_undefined']} undefined resamples, expected {expected:.0f} +- {spread:.0f}")
    n_defined = N_BOOTSTRAP - interval["n_undefined"]
    low, high = _bracket(values, weights, TAIL, n_defined), _bracket(values, weights, 1 - TAIL, n_defined)
    assert low[0] <= interval["low"] <= low[1], f"low {interval['low']} outside {low}"
    assert high[0] <= interval["high"] <= high[1], f"high {interval['high']} outside {high}"


def test_resamples_below_the_threshold_are_left_out_of_the_interval(near_threshold):
    data, scores = near_threshold
    report = run_audit(data, scores, n_shuffles=100, n_bootstrap=N_BOOTSTRAP, seed=0).to_dict()
    assert report["reference"]["advantage"] == pytest.approx(1.6 / 2.6, abs=1e-6)
    values, weights, undefined = _exact_resample_distribution(SPEC_MIN_DENOMINATOR)
    assert undefined == pytest.approx(0.35, abs=0.01)  # the threshold matters here
    _assert_matches(report["intervals"]["advantage"], values, weights, undefined)


def test_without_the_threshold_the_interval_would_differ(near_threshold):
    """The check above can tell the two apart: the interval with every positive
    denominator kept has almost no undefined resamples and another low end."""
    with_threshold = _exact_resample_distribution(SPEC_MIN_DENOMINATOR)
    without = _exact_resample_distribution(Fraction(0))
    assert without[2] < 0.02
    n_defined = N_BOOTSTRAP * (1 - with_threshold[2])
    low_with = _bracket(*with_threshold[:2], TAIL, n_defined)
    low_without = _bracket(*without[:2], TAIL, N_BOOTSTRAP * (1 - without[2]))
    assert low_without[1] < low_with[0]


def test_a_resample_at_exactly_the_threshold_is_defined(audit_data_factory):
    """Null only *below* 0.05. Four identical states of two scenes, 20 seeds: experience 0
    succeeds on 2 of 20 (0.1), experience 1 never, so random = 0.05 and oracle = 0.1 on every
    resample: the denominator is exactly 0.05 and the advantage exactly 1."""
    outcomes = np.zeros((2, 8, 20), dtype=np.int8)
    outcomes[0, :, :2] = 1
    data = audit_data_factory(outcomes, states=np.repeat([f"st{i}" for i in range(4)], 2))
    scores = np.tile([[1.0], [0.0]], (1, 8))
    interval = _published_advantage_interval(data, scores)
    assert (interval["low"], interval["high"], interval["n_undefined"]) == (1.0, 1.0, 0)


# ------------------------------------------------------------------ a loop over resampled states

def _loop_reference(y: np.ndarray, sel: np.ndarray, state_ids: np.ndarray, n: int, seed: int):
    """Advantage on `n` resamples drawn here: states with replacement, then their scenes."""
    rng = np.random.default_rng(seed)
    states = np.unique(state_ids)
    scenes_of = {s: np.flatnonzero(state_ids == s) for s in states}
    values = np.full(n, np.nan)
    for b in range(n):
        drawn = rng.integers(0, len(states), size=len(states))
        scenes = np.concatenate([scenes_of[states[i]] for i in drawn])
        ys = y[:, scenes]
        rule = ys[sel[scenes], np.arange(len(scenes))].mean()
        random, oracle = ys.mean(), ys.max(axis=0).mean()
        if oracle - random >= float(SPEC_MIN_DENOMINATOR) - 1e-12:
            values[b] = (rule - random) / (oracle - random)
    return values


def test_audit_interval_matches_a_resampling_loop_near_the_threshold(audit_data_factory):
    """A seeded setting of easy scenes (oracle - random near 0.06), 40 states x 5 renders, 5 seeds."""
    rng = np.random.default_rng(3)
    k, n_states, draws, seeds = 6, 40, 5, 5
    hard = np.repeat(rng.random(n_states) < 0.25, draws)
    p = np.where(hard, rng.uniform(0.5, 1.0, (k, n_states * draws)), 0.99)
    outcomes = (rng.random((k, n_states * draws, seeds)) < p[..., None]).astype(np.int8)
    states = np.repeat([f"st{i:02d}" for i in range(n_states)], draws)
    data = audit_data_factory(outcomes, states=states, draws=np.tile(np.arange(draws), n_states))
    scores = rng.normal(size=p.shape) + p
    y = data.success_matrix()
    sel = np.argmax(scores, axis=0)
    assert 0.05 < y.max(axis=0).mean() - y.mean() < 0.07

    reference = _loop_reference(y, sel, states, 20 * N_BOOTSTRAP, seed=11)
    defined = np.isfinite(reference)
    undefined = 1 - defined.mean()
    assert 0.05 < undefined < 0.5  # the threshold matters in this setting
    interval = _published_advantage_interval(data, scores)
    variance = N_BOOTSTRAP * undefined * (1 - undefined) * (1 + N_BOOTSTRAP / len(reference))
    spread = TOLERANCE_SE * np.sqrt(variance)
    assert abs(interval["n_undefined"] - N_BOOTSTRAP * undefined) <= spread
    values, weights = reference[defined], np.ones(int(defined.sum()))
    n_defined = N_BOOTSTRAP - interval["n_undefined"]
    low, high = _bracket(values, weights, TAIL, n_defined), _bracket(values, weights, 1 - TAIL, n_defined)
    assert low[0] <= interval["low"] <= low[1], f"low {interval['low']} outside {low}"
    assert high[0] <= interval["high"] <= high[1], f"high {interval['high']} outside {high}"


def test_an_interval_defined_on_exactly_half_the_resamples_is_reported():
    """AUDIT_SPEC / defaults: reported when at least half the resamples define the quantity."""
    from leaderboard.metrics.bootstrap import percentile_interval

    values = np.where(np.arange(2000) % 2 == 0, np.nan, np.linspace(-1.0, 1.0, 2000))
    interval = percentile_interval(values, "advantage")
    assert interval.reason is None and interval.n_undefined == 1000
    assert interval.low == pytest.approx(np.percentile(values[1::2], 100 * TAIL))
    one_more = values.copy()
    one_more[1] = np.nan
    below = percentile_interval(one_more, "advantage")
    assert (below.low, below.reason) == (None, "advantage is undefined on 1001 of 2000 resamples")
