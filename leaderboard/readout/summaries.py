"""Setting-level numbers: means over initializations with initialization-bootstrap intervals.

The initialization is the statistical unit (READOUT_SPEC, "Summaries and tests"): a
resample draws initializations with replacement (never frames, cells or contexts), and a
percentile interval is read from `n_resamples` resampled means. A difference between two
representations is paired: it is the mean over the initializations where both are
estimable of their per-initialization difference, resampled the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.metrics import InitializationMetrics


@dataclass(frozen=True)
class Summary:
    """Mean of a metric over estimable initializations with its percentile interval.

    `mean` is None (with `reason`) when no initialization is estimable; `low`/`high` are None
    (with `interval_reason`) below two. `not_estimable` counts the reasons of the others.
    """

    metric: str
    mean: float | None
    low: float | None
    high: float | None
    n: int
    reason: str | None = None
    interval_reason: str | None = None
    not_estimable: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"metric": self.metric, "mean": self.mean, "low": self.low, "high": self.high, "n": self.n,
                "reason": self.reason, "interval_reason": self.interval_reason,
                "not_estimable": dict(sorted(self.not_estimable.items()))}


def bootstrap_interval(values, *, n_resamples: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED,
                       confidence: float = defaults.CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the mean of `values` (n,) over `n_resamples` resamples of its
    entries with replacement, drawn from `numpy.random.default_rng(seed)`."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) < 2:
        raise BadArgument(f"values: {len(x)} given, a bootstrap interval needs at least 2")
    if not np.isfinite(x).all():
        raise BadArgument("values: holds NaN or infinite values")
    if n_resamples < 1:
        raise BadArgument(f"n_resamples: must be a positive integer, got {n_resamples}")
    if not 0 < confidence < 1:
        raise BadArgument(f"confidence: must lie in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_resamples, len(x)))].mean(axis=1)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def _summary(metric: str, values: list[float], not_estimable: Counter, n_resamples: int, seed: int,
             what: str) -> Summary:
    if not values:
        return Summary(metric, None, None, None, 0, reason=f"no {what}", not_estimable=dict(not_estimable))
    mean = float(np.mean(values))
    if len(values) < 2:
        return Summary(metric, mean, None, None, 1, interval_reason=f"one {what.rstrip('s')}: no interval",
                       not_estimable=dict(not_estimable))
    low, high = bootstrap_interval(values, n_resamples=n_resamples, seed=seed)
    return Summary(metric, mean, low, high, len(values), not_estimable=dict(not_estimable))


def summarize_values(name: str, values: Sequence[float], *, n_resamples: int = defaults.N_BOOTSTRAP,
                     seed: int = defaults.SEED) -> Summary:
    """Mean of per-initialization `values` with its initialization-bootstrap interval."""
    return _summary(name, [float(v) for v in values], Counter(), n_resamples, seed, "initializations")


def summarize(metrics: Sequence[InitializationMetrics], metric: str, *,
              n_resamples: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED) -> Summary:
    """Mean of `metric` over the initializations where it is estimable, with its interval."""
    values, skipped = [], Counter()
    for row in metrics:
        value = row.metric(metric)
        if value.value is None:
            skipped[value.reason] += 1
        else:
            values.append(value.value)
    return _summary(metric, values, skipped, n_resamples, seed, "estimable initializations")


def paired_difference(a: Sequence[InitializationMetrics], b: Sequence[InitializationMetrics], metric: str, *,
                      n_resamples: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED) -> Summary:
    """Mean over shared initializations of `a[s] - b[s]` for `metric`, with its interval.

    Initializations present in only one of the two, or not estimable in either, are left
    out and counted by reason.
    """
    by_id = {row.initialization: row for row in b}
    values, skipped = [], Counter()
    for row in a:
        other = by_id.get(row.initialization)
        if other is None:
            skipped["initialization absent from the second representation"] += 1
            continue
        left, right = row.metric(metric), other.metric(metric)
        if left.value is None or right.value is None:
            skipped[left.reason or right.reason] += 1
            continue
        values.append(left.value - right.value)
    shared = {row.initialization for row in a}
    missing = sum(1 for row in b if row.initialization not in shared)
    if missing:
        skipped["initialization absent from the first representation"] += missing
    return _summary(metric, values, skipped, n_resamples, seed, "initializations estimable in both")
