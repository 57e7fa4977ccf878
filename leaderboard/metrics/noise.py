"""Noise-aware reference quantities (AUDIT_SPEC, "Noise-aware reference quantities").

`success_oracle` takes per-scene maxima of seed means, so execution noise
alone lifts it above `success_random`: at K = 3 and 5 seeds, identical
experiences give `oracle - random` of about 0.10. Two quantities separate
the library's per-scene structure from that noise:

- the cross-fitted oracle chooses on all seeds but one and scores on the held
  out seed, so noise cannot pick its own winners (a lower end for the
  noise-free oracle, `success_oracle` the upper end: the oracle bracket);
- the noise null is the distribution of `oracle - random` when every
  experience of a scene is interchangeable (each outcome drawn from the
  scene's own success rate), against which the observed value gets a p-value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from expaudit.errors import InvalidInput
from leaderboard.metrics.selection import FLOAT_TOLERANCE


NULL_BATCH = 100
"""Null resamples drawn together. A fixed number, not a memory budget: the draws depend on it,
so it never changes with the machine or `chunking.CHUNK_ELEMENTS`, and the first B resamples
of a longer null are the B of a shorter one whenever B is a multiple of it."""


@dataclass(frozen=True)
class NoiseResult:
    """The noise-aware quantities of one transfer tensor (they do not depend on the rule).

    `headroom_cf` is `success_oracle_cf - success_random`; `null_p95` and
    `null_p_value` place the observed `success_oracle - success_random`
    against `n_null` resamples of the noise null; `scene_oracle_cf` (Q,) is the
    cross-fitted oracle per scene (the bootstrap's `headroom_cf` interval).
    """

    success_oracle_cf: float
    headroom_cf: float
    observed_gap: float
    null_p95: float
    null_p_value: float
    n_null: int
    scene_oracle_cf: np.ndarray


def _check_outcomes(outcomes: np.ndarray) -> np.ndarray:
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 3 or 0 in outcomes.shape:
        raise InvalidInput(f"outcomes must be a non-empty (K, Q, S) array, got shape {outcomes.shape}")
    if outcomes.shape[2] < 2:
        raise InvalidInput(f"outcomes must have at least 2 seeds to cross-fit, got S={outcomes.shape[2]}")
    if not np.isin(outcomes, (0, 1)).all():
        raise InvalidInput("outcomes must be 0/1 in every cell (a complete tensor)")
    return outcomes


def oracle_cf_by_scene(outcomes: np.ndarray) -> np.ndarray:
    """Cross-fitted oracle success per scene, shape (Q,).

    For each held-out seed s, every scene's choice is the set of experiences
    with the highest success over the other seeds (ties share the choice
    evenly), scored on seed s; the result is the mean over seeds.

    Parameters
    ----------
    outcomes : (K, Q, S) 0/1 outcomes, S >= 2.
    """
    outcomes = _check_outcomes(outcomes)
    n_seeds = outcomes.shape[2]
    wins = outcomes.sum(axis=2, dtype=np.int32)  # (K, Q); argmax of a sum = argmax of a mean
    per_scene = np.zeros(outcomes.shape[1])
    for seed in range(n_seeds):
        held_out = outcomes[:, :, seed]
        other = wins - held_out
        chosen = other == other.max(axis=0)  # integers: exact ties
        per_scene += (chosen & (held_out == 1)).sum(axis=0) / chosen.sum(axis=0)
    return per_scene / n_seeds


def _binomial_pmf(p: np.ndarray, n_seeds: int) -> np.ndarray:
    """(Q, S + 1): probability that a Binomial(S, p_q) equals j."""
    j = np.arange(n_seeds + 1)
    comb = np.array([math.comb(n_seeds, k) for k in j], dtype=np.float64)
    return comb * p[:, None] ** j * (1.0 - p[:, None]) ** (n_seeds - j)


def noise_null(outcomes: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`oracle - random` of `n_resamples` tensors whose experiences are interchangeable, (B,).

    Each resample draws `outcome*[i, q, s] ~ Bernoulli(p_q)`, `p_q` the scene's
    mean over experiences and seeds (`null_from_rates`).
    """
    outcomes = _check_outcomes(outcomes)
    n_exp, _, n_seeds = outcomes.shape
    return null_from_rates(outcomes.mean(axis=(0, 2)), n_exp, n_seeds, n_resamples, rng)


def null_from_rates(rates: np.ndarray, n_exp: int, n_seeds: int, n_resamples: int,
                    rng: np.random.Generator) -> np.ndarray:
    """The noise null of K = `n_exp` interchangeable experiences and S = `n_seeds` seeds on
    scenes of success rates `rates` (Q,): `oracle - random` of each resample, (B,).

    Only how many experiences reach each seed count j = 0..S matters to both quantities, so
    each scene draws those counts (a multinomial over j, as conditional binomials from j = S
    down) instead of K x S outcomes: exact, in O(B x Q x S) time and O(`NULL_BATCH` x Q)
    memory.
    """
    rates = np.asarray(rates, dtype=np.float64)
    pmf = _binomial_pmf(rates, n_seeds)
    below = np.cumsum(pmf, axis=1)  # P(count <= j)
    conditional = np.divide(pmf, below, out=np.zeros_like(pmf), where=below > 0).clip(0.0, 1.0)
    null = np.empty(n_resamples)
    n_scenes = rates.shape[0]
    for start in range(0, n_resamples, NULL_BATCH):
        rows = min(NULL_BATCH, n_resamples - start)
        remaining = np.full((rows, n_scenes), n_exp, dtype=np.int64)
        top = np.zeros((rows, n_scenes), dtype=np.int64)
        total = np.zeros((rows, n_scenes), dtype=np.int64)
        for j in range(n_seeds, 0, -1):
            count = rng.binomial(remaining, conditional[:, j])
            top = np.maximum(top, np.where(count > 0, j, 0))
            total += j * count
            remaining -= count
        null[start:start + rows] = (top.mean(axis=1) - total.mean(axis=1) / n_exp) / n_seeds
    return null


def noise_aware(outcomes: np.ndarray, n_resamples: int, rng: np.random.Generator) -> NoiseResult:
    """The cross-fitted oracle, `headroom_cf` and the noise null's p95 and p-value.

    The p-value is one-sided, `(1 + #{null >= observed}) / (B + 1)`, with
    float slack `FLOAT_TOLERANCE` on the comparison.
    """
    outcomes = _check_outcomes(outcomes)
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InvalidInput(f"n_resamples must be a positive integer, got {n_resamples!r}")
    y = outcomes.mean(axis=2)
    random = float(y.mean())
    observed = float(y.max(axis=0).mean()) - random
    per_scene = oracle_cf_by_scene(outcomes)
    oracle_cf = float(per_scene.mean())
    null = noise_null(outcomes, n_resamples, rng)
    exceed = int((null >= observed - FLOAT_TOLERANCE).sum())
    return NoiseResult(
        success_oracle_cf=oracle_cf,
        headroom_cf=oracle_cf - random,
        observed_gap=observed,
        null_p95=float(np.percentile(null, 95.0)),
        null_p_value=(1 + exceed) / (n_resamples + 1),
        n_null=n_resamples,
        scene_oracle_cf=per_scene,
    )
