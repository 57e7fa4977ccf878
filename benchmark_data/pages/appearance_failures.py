"""Failures caused by appearance, with intervals clustered over physical states.

The paper's appearance figure (Stack: Policy 26%, Policy+DR 2%) is the share
of failures on perturbed appearance draws whose nominal twin succeeded. The
five renders of one physical state share its layout, so they are not
independent: the intervals here resample whole states (the 40 clusters of a
query set), as the audit's do (AUDIT_SPEC "Intervals"). Policy and Policy+DR
of one task and query set run the same scenes, so their difference is
resampled with the same states on both sides (paired), which is narrower and
honest about what is compared.

A closed-loop policy is stochastic: a failure's twin can succeed by execution
noise alone. `noise_floor_share` measures that floor on the nominal draw (a
draw-0 failure against the same scene under each other seed), so the share
on draws 1-4 is read against what it would be if appearance changed nothing.
Pure functions: arrays in, a frozen result out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from expaudit.errors import InvalidInput
from leaderboard.matrix import MISSING
from leaderboard.metrics import defaults
from leaderboard.metrics.bootstrap import (Interval, cluster_index, cluster_sums, percentile_interval,
                                          resample_counts)

__all__ = ["AppearanceFailureShare", "NoiseFloorShare", "ShareDifference", "appearance_failure_share",
           "appearance_share_difference", "complete_seeds", "excess_over_noise_floor", "noise_floor_share"]


def complete_seeds(outcomes: np.ndarray) -> tuple[int, ...]:
    """The seed indices whose K x Q slice of `outcomes` (K x Q x S) holds no `MISSING` cell."""
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 3:
        raise InvalidInput(f"outcomes must be a (K, Q, S) tensor, got shape {outcomes.shape}")
    done = (outcomes != MISSING).all(axis=(0, 1))
    return tuple(int(s) for s in np.flatnonzero(done))


@dataclass(frozen=True)
class AppearanceFailureShare:
    """Failures on perturbed appearance draws and how many of them appearance caused.

    failures : failures on appearance draws 1-4, counted over experiences, scenes and seeds.
    appearance_caused : of those, the ones whose draw-0 twin succeeded.
    share : appearance_caused / failures; None when there is no such failure.
    seeds : the seeds counted.
    interval : 95% percentile interval of the share over resampled physical states;
        None when the share is None (no seed, or no failure).
    n_states : physical states (clusters) resampled.
    n_bootstrap, rng_seed : the resamples drawn and the generator's seed, to reproduce the interval.
    """

    failures: int
    appearance_caused: int
    share: float | None
    seeds: tuple[int, ...]
    interval: Interval | None
    n_states: int
    n_bootstrap: int
    rng_seed: int


@dataclass(frozen=True)
class NoiseFloorShare:
    """How often a nominal-appearance failure's twin succeeds by execution noise alone.

    failure_pairs : (draw-0 failure under seed s, other seed s') pairs, over experiences and states.
    twin_successes : of those, the pairs where the same experience and scene succeeded under s'.
    share : twin_successes / failure_pairs; None when undefined, `reason` saying why.
    seeds, interval, n_states, n_bootstrap, rng_seed : as in `AppearanceFailureShare`.
    reason : why `share` is None ("fewer than two seeds", "no draw-0 failure"); None otherwise.
    """

    failure_pairs: int
    twin_successes: int
    share: float | None
    seeds: tuple[int, ...]
    interval: Interval | None
    n_states: int
    n_bootstrap: int
    rng_seed: int
    reason: str | None = None


@dataclass(frozen=True)
class ShareDifference:
    """One share minus another over the same states and seeds, paired: Policy minus Policy+DR
    (`appearance_share_difference`), or a share minus its noise floor
    (`excess_over_noise_floor`).

    difference : None when either share is None, `reason` saying why.
    interval : 95% percentile interval over resampled states, the same resample on both sides.
    seeds : the seeds counted on both sides (complete in both).
    n_states, n_bootstrap, rng_seed : as in `AppearanceFailureShare`.
    reason : why `difference` is None; None otherwise.
    """

    difference: float | None
    interval: Interval | None
    seeds: tuple[int, ...]
    n_states: int
    n_bootstrap: int
    rng_seed: int
    reason: str | None = None


@dataclass(frozen=True)
class _StateCounts:
    """Per-state totals of a share's denominator and numerator: its sufficient statistics.

    For `appearance_failure_share`: failures on draws 1-4, and those whose draw-0 twin
    succeeded; for `noise_floor_share`: draw-0 (failure, other seed) pairs, and those whose
    twin succeeded."""

    denominator: np.ndarray  # (C,) per physical state
    numerator: np.ndarray  # (C,)
    index: np.ndarray  # (Q,) cluster of each scene
    n_states: int


def _check_seeds(outcomes: np.ndarray, seeds) -> tuple[int, ...]:
    """The seeds as ints, refused when repeated, out of range or with a MISSING cell."""
    seeds = tuple(int(s) for s in seeds)
    if len(set(seeds)) != len(seeds):
        raise InvalidInput(f"seeds: {list(seeds)} names a seed twice")
    bad = [s for s in seeds if not 0 <= s < outcomes.shape[2]]
    if bad:
        raise InvalidInput(f"seeds: {bad[0]} is not in 0-{outcomes.shape[2] - 1}")
    y = outcomes[:, :, list(seeds)]
    missing = [s for j, s in enumerate(seeds) if (y[:, :, j] == MISSING).any()]
    if missing:
        raise InvalidInput(f"seeds: seed {missing[0]} has MISSING cells; pass complete seeds only")
    return seeds


def _check_scenes(outcomes: np.ndarray, state_ids, appearance_draw,
                  name: str = "outcomes") -> tuple[np.ndarray, np.ndarray]:
    """State ids and draws as arrays, refused (naming the field) unless one per scene of `outcomes`."""
    if outcomes.ndim != 3:
        raise InvalidInput(f"{name} must be a (K, Q, S) tensor, got shape {outcomes.shape}")
    state_ids = np.asarray(state_ids)
    draws = np.asarray(appearance_draw, dtype=np.int64)
    n_scenes = outcomes.shape[1]
    for field, values in (("state_ids", state_ids), ("appearance_draw", draws)):
        if values.shape != (n_scenes,):
            raise InvalidInput(f"{field} must have shape ({n_scenes},) like the scenes of {name}, "
                               f"got {values.shape}")
    return state_ids, draws


def _check_resamples(n_bootstrap: int) -> None:
    """Refuse a resample count below 1, naming it."""
    if n_bootstrap < 1:
        raise InvalidInput(f"n_bootstrap must be at least 1, got {n_bootstrap}")


def _draw0_twin(state_ids: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """For every scene, the index of the draw-0 scene of its physical state."""
    nominal: dict = {}
    for q in np.flatnonzero(draws == 0):
        sid = state_ids[q]
        if sid in nominal:
            raise InvalidInput(f"appearance_draw: state {sid!r} has more than one draw-0 scene")
        nominal[sid] = int(q)
    absent = [sid for sid in state_ids if sid not in nominal]
    if absent:
        raise InvalidInput(f"appearance_draw: state {absent[0]!r} has no draw-0 scene")
    return np.array([nominal[sid] for sid in state_ids], dtype=np.int64)


def _state_counts(outcomes: np.ndarray, state_ids: np.ndarray, draws: np.ndarray,
                  seeds: tuple[int, ...]) -> _StateCounts:
    """Failures on draws 1-4 and appearance-caused failures, summed per physical state."""
    y = outcomes[:, :, list(seeds)]
    twin = _draw0_twin(state_ids, draws)
    perturbed = (draws >= 1)[None, :, None]
    fail = (y == 0) & perturbed
    caused = fail & (y[:, twin, :] == 1)
    index, n_states = cluster_index(state_ids)
    per_scene = np.stack([fail.sum(axis=(0, 2)), caused.sum(axis=(0, 2))], axis=1).astype(np.float64)
    sums = cluster_sums(index, n_states, per_scene)
    return _StateCounts(denominator=sums[:, 0], numerator=sums[:, 1], index=index, n_states=n_states)


def _noise_counts(outcomes: np.ndarray, state_ids: np.ndarray, draws: np.ndarray,
                  seeds: tuple[int, ...]) -> _StateCounts:
    """Per physical state: draw-0 (failure, other seed) pairs and those whose other seed succeeded.

    An experience with f failures and n successes over S seeds of one draw-0
    scene gives f * (S - 1) pairs, f * n of them with a succeeding twin."""
    y = outcomes[:, :, list(seeds)]
    nominal = (draws == 0)[None, :]
    fails = ((y == 0).sum(axis=2) * nominal).astype(np.float64)
    wins = ((y == 1).sum(axis=2) * nominal).astype(np.float64)
    pairs = fails * (len(seeds) - 1)
    index, n_states = cluster_index(state_ids)
    per_scene = np.stack([pairs.sum(axis=0), (fails * wins).sum(axis=0)], axis=1)
    sums = cluster_sums(index, n_states, per_scene)
    return _StateCounts(denominator=sums[:, 0], numerator=sums[:, 1], index=index, n_states=n_states)


def _resampled_shares(counts: list[_StateCounts], n_bootstrap: int, seed: int) -> list[np.ndarray]:
    """(B,) resampled shares of each count set, every one under the same state resamples."""
    n_states = counts[0].n_states
    weights = resample_counts(n_states, n_bootstrap, np.random.default_rng(seed)).astype(np.float64)
    out = []
    for c in counts:
        failures = weights @ c.denominator
        share = np.full(n_bootstrap, np.nan)
        np.divide(weights @ c.numerator, failures, out=share, where=failures > 0)
        out.append(share)
    return out


def appearance_failure_share(outcomes: np.ndarray, state_ids, appearance_draw, seeds, *,
                             n_bootstrap: int = defaults.N_BOOTSTRAP,
                             seed: int = defaults.SEED) -> AppearanceFailureShare:
    """The share of failures caused by appearance, with a state-clustered interval.

    Definition: over the given seeds and all K experiences, take every failure
    (outcome 0) of experience i in a scene q with appearance draw 1-4 under
    seed s. Its draw-0 twin is the outcome of the same experience i, under the
    same seed s, in the scene with the same physical state (`state_ids[q]`) and
    appearance draw 0. The failure counts as caused by appearance when that
    twin succeeded (outcome 1): the same policy, state and seed succeed under
    nominal appearance. The share is (failures whose twin succeeded) /
    (failures on draws 1-4); None when there is no failure on draws 1-4.

    The interval resamples physical states with replacement (`n_bootstrap`
    times, generator `seed`), all of a state's scenes, experiences and seeds
    together. `outcomes` is K x Q x S; `state_ids` and `appearance_draw` have
    length Q. Every state must have exactly one draw-0 scene, and no cell of
    the given seeds may be `MISSING` (pass `complete_seeds(outcomes)`).
    """
    outcomes = np.asarray(outcomes)
    state_ids, draws = _check_scenes(outcomes, state_ids, appearance_draw)
    seeds = _check_seeds(outcomes, seeds)
    _check_resamples(n_bootstrap)
    plan = dict(n_bootstrap=n_bootstrap, rng_seed=seed)
    if not seeds:
        return AppearanceFailureShare(failures=0, appearance_caused=0, share=None, seeds=(), interval=None,
                                      n_states=0, **plan)
    counts = _state_counts(outcomes, state_ids, draws, seeds)
    failures, caused = int(counts.denominator.sum()), int(counts.numerator.sum())
    if failures == 0:
        return AppearanceFailureShare(failures=0, appearance_caused=0, share=None, seeds=seeds, interval=None,
                                      n_states=counts.n_states, **plan)
    (resampled,) = _resampled_shares([counts], n_bootstrap, seed)
    return AppearanceFailureShare(failures=failures, appearance_caused=caused, share=caused / failures,
                                  seeds=seeds, interval=percentile_interval(resampled, "share"),
                                  n_states=counts.n_states, **plan)


def appearance_share_difference(policy: np.ndarray, policy_dr: np.ndarray, state_ids, appearance_draw,
                                seeds, *, n_bootstrap: int = defaults.N_BOOTSTRAP,
                                seed: int = defaults.SEED) -> ShareDifference:
    """Policy share minus Policy+DR share, with a paired state-clustered interval.

    `policy` and `policy_dr` are K x Q x S tensors over the same scenes (one
    task and query set); `seeds` must be complete in both. Each resample draws
    one multiset of physical states and computes both shares on it, so the
    interval is of the paired difference.
    """
    policy, policy_dr = np.asarray(policy), np.asarray(policy_dr)
    state_ids, draws = _check_scenes(policy, state_ids, appearance_draw, "policy")
    _check_scenes(policy_dr, state_ids, draws, "policy_dr")
    seeds = _check_seeds(policy, seeds)
    _check_seeds(policy_dr, seeds)
    _check_resamples(n_bootstrap)
    plan = dict(n_bootstrap=n_bootstrap, rng_seed=seed)
    if not seeds:
        return ShareDifference(difference=None, interval=None, seeds=(), n_states=0, reason="no seed",
                               **plan)
    counts = [_state_counts(y, state_ids, draws, seeds) for y in (policy, policy_dr)]
    n_states = counts[0].n_states
    for c, name in zip(counts, ("Policy", "Policy+DR")):
        if c.denominator.sum() == 0:
            return ShareDifference(difference=None, interval=None, seeds=seeds, n_states=n_states,
                                   reason=f"no {name} failure on draws 1-4", **plan)
    point = [c.numerator.sum() / c.denominator.sum() for c in counts]
    first, second = _resampled_shares(counts, n_bootstrap, seed)
    return ShareDifference(difference=float(point[0] - point[1]),
                           interval=percentile_interval(first - second, "share difference"), seeds=seeds,
                           n_states=n_states, **plan)


def noise_floor_share(outcomes: np.ndarray, state_ids, appearance_draw, seeds, *,
                      n_bootstrap: int = defaults.N_BOOTSTRAP,
                      seed: int = defaults.SEED) -> NoiseFloorShare:
    """The share of nominal failures whose twin under another seed succeeds: the noise floor.

    Definition: for every failure of experience i in a draw-0 scene q under
    seed s, and every other given seed s', the pair counts; its twin (i, q,
    s') either succeeded or not. The share is (pairs whose twin succeeded) /
    (pairs). If appearance changed nothing, a failure on draws 1-4 would be
    one more execution of the same state, and `appearance_failure_share` would
    equal this floor; what it exceeds the floor by is appearance's doing.
    None with fewer than two seeds or no draw-0 failure. Interval and inputs as
    in `appearance_failure_share`.
    """
    outcomes = np.asarray(outcomes)
    state_ids, draws = _check_scenes(outcomes, state_ids, appearance_draw)
    seeds = _check_seeds(outcomes, seeds)
    _check_resamples(n_bootstrap)
    _draw0_twin(state_ids, draws)  # one draw-0 scene per state, as for the share it is read against
    plan = dict(n_bootstrap=n_bootstrap, rng_seed=seed)
    if len(seeds) < 2:
        return NoiseFloorShare(failure_pairs=0, twin_successes=0, share=None, seeds=seeds, interval=None,
                               n_states=0, reason="fewer than two seeds", **plan)
    counts = _noise_counts(outcomes, state_ids, draws, seeds)
    pairs, wins = int(counts.denominator.sum()), int(counts.numerator.sum())
    if pairs == 0:
        return NoiseFloorShare(failure_pairs=0, twin_successes=0, share=None, seeds=seeds, interval=None,
                               n_states=counts.n_states, reason="no draw-0 failure", **plan)
    (resampled,) = _resampled_shares([counts], n_bootstrap, seed)
    return NoiseFloorShare(failure_pairs=pairs, twin_successes=wins, share=wins / pairs, seeds=seeds,
                           interval=percentile_interval(resampled, "noise floor"),
                           n_states=counts.n_states, **plan)


def excess_over_noise_floor(outcomes: np.ndarray, state_ids, appearance_draw, seeds, *,
                            n_bootstrap: int = defaults.N_BOOTSTRAP,
                            seed: int = defaults.SEED) -> ShareDifference:
    """`appearance_failure_share` minus `noise_floor_share` of one setting, paired: each
    resample draws one multiset of physical states for both, so the interval is of the
    excess itself, the part of the share that execution noise does not explain. Inputs as
    in `appearance_failure_share` (K x Q x S outcomes, Q state ids and draws, complete
    seeds); None, with the reason, below two seeds or without failures on either side."""
    outcomes = np.asarray(outcomes)
    state_ids, draws = _check_scenes(outcomes, state_ids, appearance_draw)
    seeds = _check_seeds(outcomes, seeds)
    _check_resamples(n_bootstrap)
    _draw0_twin(state_ids, draws)
    plan = dict(n_bootstrap=n_bootstrap, rng_seed=seed)
    if len(seeds) < 2:
        return ShareDifference(difference=None, interval=None, seeds=seeds, n_states=0,
                               reason="fewer than two seeds", **plan)
    counts = [_state_counts(outcomes, state_ids, draws, seeds), _noise_counts(outcomes, state_ids, draws, seeds)]
    n_states = counts[0].n_states
    for c, what in zip(counts, ("no failure on draws 1-4", "no draw-0 failure")):
        if c.denominator.sum() == 0:
            return ShareDifference(difference=None, interval=None, seeds=seeds, n_states=n_states,
                                   reason=what, **plan)
    point = [c.numerator.sum() / c.denominator.sum() for c in counts]
    share, floor = _resampled_shares(counts, n_bootstrap, seed)
    return ShareDifference(difference=float(point[0] - point[1]),
                           interval=percentile_interval(share - floor, "excess over the noise floor"),
                           seeds=seeds, n_states=n_states, **plan)
