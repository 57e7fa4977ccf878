"""The benchmark's bar for a setting that can tell selectors apart, and why one misses it.

A setting discriminates when its library leaves a selector something to find
(oracle - random success at least `MIN_GAP`) and a random pick neither almost
always fails nor almost always succeeds (random success within
`RANDOM_RANGE`). The same bar holds for Replay and policy settings, on the
generated data pages and on the leaderboard. It is stricter than the point
where A stops being defined (`defaults.ADVANTAGE_MIN_DENOMINATOR`): a setting
can have a defined A and still miss the bar.
"""

from __future__ import annotations

import numpy as np

from leaderboard.metrics.selection import FLOAT_TOLERANCE

MIN_GAP = 0.10
"""Least oracle - random success of a setting that discriminates."""
RANDOM_RANGE = (0.30, 0.85)
"""Closed range random success must lie in."""


def shortfall(random: float, oracle: float) -> str | None:
    """What misses the bar, measured (e.g. "random success 0.18 is below 0.30"); None when met.

    Both parts are named when both miss. Float slack `FLOAT_TOLERANCE` is allowed at each edge.
    """
    low, high = RANDOM_RANGE
    misses = []
    gap = oracle - random
    if gap < MIN_GAP - FLOAT_TOLERANCE:
        misses.append(f"oracle - random = {oracle:.3f} - {random:.3f} = {gap:.3f} is below {MIN_GAP:.2f}")
    if random < low - FLOAT_TOLERANCE:
        misses.append(f"random success {random:.3f} is below {low:.2f}")
    elif random > high + FLOAT_TOLERANCE:
        misses.append(f"random success {random:.3f} is above {high:.2f}")
    return "; ".join(misses) or None


def discriminates(random: float, oracle: float) -> bool:
    """The bar: oracle - random >= `MIN_GAP` and random within `RANDOM_RANGE`."""
    return shortfall(random, oracle) is None


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
