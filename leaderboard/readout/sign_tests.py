"""The primary tests (READOUT_SPEC, "Summaries and tests"): one-sided exact sign tests over
initializations, Holm-adjusted over the family published together.

Per (task, representation) two hypotheses, each a direction for every initialization:
`gain[s] < 1` (the difference `1 - gain[s]` is positive) and
`mae_controlled[s] > mae_natural[s]` (the difference `mae_controlled - mae_natural` is
positive). The sign test counts positive differences `k` among the `n` non-zero ones and
gives `P(X >= k)` for `X ~ Binomial(n, 1/2)`: exact, no normal approximation. A zero
difference (a tie: within `TIE_RTOL`, rounding) carries no direction and is dropped, as the
standard sign test does; an initialization where either metric is not estimable is left
out. Holm's step-down adjustment runs over the tests of the family that have a p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.metrics import InitializationMetrics

HYPOTHESES = {
    "gain_below_one": "gain[s] < 1",
    "controlled_above_natural": "mae_controlled[s] > mae_natural[s]",
}
"""The primary hypotheses per (task, representation), by key."""


@dataclass(frozen=True)
class SignTest:
    """One one-sided exact sign test; `p_value` None (with `reason`) when no difference is
    non-zero. `p_holm` is filled in by `holm_family`."""

    test_id: str
    hypothesis: str
    n_positive: int
    n_negative: int
    n_ties: int
    n_not_estimable: int
    p_value: float | None
    reason: str | None = None
    p_holm: float | None = None

    def to_dict(self) -> dict:
        return {"test_id": self.test_id, "hypothesis": self.hypothesis, "n_positive": self.n_positive,
                "n_negative": self.n_negative, "n_ties": self.n_ties, "n_not_estimable": self.n_not_estimable,
                "p_value": self.p_value, "p_holm": self.p_holm, "reason": self.reason}


def sign_test_p(n_positive: int, n_negative: int) -> float:
    """One-sided exact p-value `P(X >= n_positive)`, X ~ Binomial(n_positive + n_negative, 1/2)."""
    if n_positive < 0 or n_negative < 0:
        raise BadArgument(f"counts: must be non-negative, got {n_positive} and {n_negative}")
    n = n_positive + n_negative
    if n == 0:
        raise BadArgument("counts: no non-zero difference, the sign test is undefined")
    return math.fsum(math.comb(n, i) for i in range(n_positive, n + 1)) / 2.0 ** n


def sign_test(test_id: str, hypothesis: str, differences: Sequence[float | None]) -> SignTest:
    """Sign test of `differences` (None = not estimable) for the hypothesis that they are positive."""
    known = np.array([d for d in differences if d is not None], dtype=np.float64)
    if not np.isfinite(known).all():
        raise BadArgument(f"{test_id}: a difference is NaN or infinite")
    positive, negative = int((known > 0).sum()), int((known < 0).sum())
    ties, absent = int((known == 0).sum()), len(differences) - len(known)
    if positive + negative == 0:
        return SignTest(test_id, hypothesis, positive, negative, ties, absent, None,
                        "no initialization with a non-zero difference")
    return SignTest(test_id, hypothesis, positive, negative, ties, absent, sign_test_p(positive, negative))


def difference(a: float | None, b: float | None) -> float | None:
    """`a - b`, 0 (a tie) within `TIE_RTOL` of the larger magnitude, None when either is unknown."""
    if a is None or b is None:
        return None
    d = a - b
    return 0.0 if abs(d) <= defaults.TIE_RTOL * max(abs(a), abs(b), 1.0) else d


def primary_tests(prefix: str, metrics: Sequence[InitializationMetrics]) -> tuple[SignTest, SignTest]:
    """Both primary tests of one (task, representation); ids are `prefix/<hypothesis key>`."""
    gains = [difference(1.0, m.gain.value) for m in metrics]
    maes = [difference(m.mae_controlled.value, m.mae_natural.value) for m in metrics]
    return (sign_test(f"{prefix}/gain_below_one", HYPOTHESES["gain_below_one"], gains),
            sign_test(f"{prefix}/controlled_above_natural", HYPOTHESES["controlled_above_natural"], maes))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    Sorted ascending, the i-th smallest (1-based) of m becomes
    `max over j <= i of min(1, (m - j + 1) p_(j))`.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or ((p < 0) | (p > 1) | ~np.isfinite(p)).any():
        raise BadArgument("p_values: must be a list of numbers in [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(v) for v in adjusted]


def holm_family(tests: Sequence[SignTest]) -> list[SignTest]:
    """The tests with `p_holm` set, Holm-adjusted over those that have a p-value; ids must be unique."""
    ids = [t.test_id for t in tests]
    if len(set(ids)) != len(ids):
        raise BadArgument("tests: a test id appears twice in the family")
    defined = [i for i, t in enumerate(tests) if t.p_value is not None]
    adjusted = dict(zip(defined, holm([tests[i].p_value for i in defined])))
    return [replace(t, p_holm=adjusted.get(i)) for i, t in enumerate(tests)]
