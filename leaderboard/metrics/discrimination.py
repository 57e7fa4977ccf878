"""Whether a setting can tell selectors apart, and why one cannot.

The rule (AUDIT_SPEC, "Noise-aware reference quantities"; adopted in
docs/policy_protocol.md): a setting discriminates when a random pick neither
almost always fails nor almost always succeeds (random success within
`RANDOM_RANGE`) and the library leaves a selector something to find beyond
execution noise (the lower end of the 95% interval of `headroom_cf`, the
cross-fitted oracle minus random, above 0): `noise_shortfall`.

The paper's bar (`shortfall`: oracle - random at least `MIN_GAP`, random
within `RANDOM_RANGE`) is still computed and shown beside it, labelled as the
paper's: at K = 3 and 5 seeds noise alone brings oracle - random near 0.10.
Both hold for Replay and policy settings alike, on the generated data pages
and on the leaderboard.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.bootstrap import Interval, headroom_cf_interval
from leaderboard.metrics.noise import NoiseResult, noise_aware
from leaderboard.metrics.selection import FLOAT_TOLERANCE

MIN_GAP = 0.10
"""The paper's bar: least oracle - random success (shown beside the rule, not the verdict)."""
RANDOM_RANGE = (0.30, 0.85)
"""Closed range random success must lie in."""


def shortfall(random: float, oracle: float) -> str | None:
    """What misses the paper's bar, measured (e.g. "random success 0.18 is below 0.30"); None
    when met.

    Both parts are named when both miss. Float slack `FLOAT_TOLERANCE` is allowed at each edge.
    """
    misses = []
    gap = oracle - random
    if gap < MIN_GAP - FLOAT_TOLERANCE:
        misses.append(f"oracle - random = {oracle:.3f} - {random:.3f} = {gap:.3f} is below {MIN_GAP:.2f}")
    random_miss = _random_miss(random)
    if random_miss:
        misses.append(random_miss)
    return "; ".join(misses) or None


def discriminates(random: float, oracle: float) -> bool:
    """The paper's bar: oracle - random >= `MIN_GAP` and random within `RANDOM_RANGE`."""
    return shortfall(random, oracle) is None


def _random_miss(random: float) -> str | None:
    low, high = RANDOM_RANGE
    if random < low - FLOAT_TOLERANCE:
        return f"random success {random:.3f} is below {low:.2f}"
    if random > high + FLOAT_TOLERANCE:
        return f"random success {random:.3f} is above {high:.2f}"
    return None


def noise_shortfall(random: float, headroom_cf_low: float | None) -> str | None:
    """What misses the noise-aware rule, measured; None when the setting discriminates.

    `headroom_cf_low` is the lower end of the 95% interval of `headroom_cf`; None (an
    undefined interval) misses the rule. Both parts are named when both miss.
    """
    misses = []
    if headroom_cf_low is None:
        misses.append("the interval of headroom_cf (cross-fitted oracle - random) is undefined")
    elif headroom_cf_low <= 0.0:
        misses.append(f"the 95% interval of headroom_cf (cross-fitted oracle - random) starts at "
                      f"{headroom_cf_low:.3f}, not above 0: per-scene choice is not told apart "
                      "from execution noise")
    random_miss = _random_miss(random)
    if random_miss:
        misses.append(random_miss)
    return "; ".join(misses) or None


def noise_discriminates(random: float, headroom_cf_low: float | None) -> bool:
    """The rule: random within `RANDOM_RANGE` and the `headroom_cf` interval above 0."""
    return noise_shortfall(random, headroom_cf_low) is None


MIN_QUALITY_RANGE = 0.10
"""Least quality range (best experience's mean success minus the worst's) of a library whose
experiences differ enough in quality for a selector to have something to find."""


def quality_range(success) -> float:
    """The best experience's mean success minus the worst's, from a K x Q success matrix."""
    means = np.asarray(success, dtype=np.float64).mean(axis=1)
    return float(means.max() - means.min())


def quality_shortfall(value: float) -> str | None:
    """"quality range (best experience's mean success minus the worst's) 0.040 is below 0.10: ..."
    where `value` misses `MIN_QUALITY_RANGE`, else None.

    This is not part of the discrimination bar: a setting can discriminate with experiences of
    nearly equal quality (the spread is then all per scene), and the label says so."""
    if value >= MIN_QUALITY_RANGE - FLOAT_TOLERANCE:
        return None
    return (f"quality range (best experience's mean success minus the worst's) {value:.3f} is "
            f"below {MIN_QUALITY_RANGE:.2f}: the experiences barely differ in quality")


@dataclass(frozen=True)
class SettingLabel:
    """A setting's label by the noise-aware rule, with the paper's bar beside it.

    `reason` says what misses the rule (None when the setting discriminates), `paper_reason`
    what misses the paper's bar; `noise` and `headroom_cf` are the numbers the rule reads.
    """

    random: float
    oracle: float
    noise: NoiseResult
    headroom_cf: Interval
    discriminates: bool
    reason: str | None
    paper_discriminates: bool
    paper_reason: str | None


def setting_label(outcomes: np.ndarray, state_ids: np.ndarray, *,
                  n_bootstrap: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED) -> SettingLabel:
    """Label a complete (K, Q, S) outcome tensor whose scenes belong to `state_ids` (Q,).

    The draws are the audit's (`leaderboard.audit.run_audit` with the same `n_bootstrap` and
    `seed`): the noise null from its sixth stream, the `headroom_cf` interval from the
    bootstrap's fourth, so the label equals the one every report of the setting carries.
    """
    outcomes = np.asarray(outcomes)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)]
    noise = noise_aware(outcomes, defaults.N_NOISE_NULL, streams[5])
    y = outcomes.mean(axis=2)
    interval = headroom_cf_interval(y, np.asarray(state_ids), noise.scene_oracle_cf, n_bootstrap,
                                    streams[3])
    random, oracle = float(y.mean()), float(y.max(axis=0).mean())
    reason, paper_reason = noise_shortfall(random, interval.low), shortfall(random, oracle)
    return SettingLabel(random=random, oracle=oracle, noise=noise, headroom_cf=interval,
                        discriminates=reason is None, reason=reason,
                        paper_discriminates=paper_reason is None, paper_reason=paper_reason)
