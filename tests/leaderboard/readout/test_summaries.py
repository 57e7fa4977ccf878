"""Initialization-bootstrap means and paired differences."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.metrics import InitializationMetrics, Value
from leaderboard.readout.summaries import bootstrap_interval, paired_difference, summarize


def _rows(prefix, gains):
    out = []
    for i, g in enumerate(gains):
        v = Value(g, None if g is not None else "1 admitted context, at least 2 are needed")
        out.append(InitializationMetrics(f"{prefix}{i}", Value(1.0), Value(2.0), v, v, v, v, (), False, 1, 1))
    return out


def test_interval_reproducible_by_seed():
    values = np.arange(12.0) ** 1.5
    first = bootstrap_interval(values, n_resamples=2000, seed=3)
    assert bootstrap_interval(values, n_resamples=2000, seed=3) == first
    assert bootstrap_interval(values, n_resamples=2000, seed=4) != first
    assert first[0] < values.mean() < first[1]


def test_interval_is_the_percentiles_of_resampled_means():
    values = np.array([0.0, 1.0, 5.0])
    rng = np.random.default_rng(7)
    means = values[rng.integers(0, 3, size=(500, 3))].mean(axis=1)
    assert bootstrap_interval(values, n_resamples=500, seed=7) == tuple(np.percentile(means, [2.5, 97.5]))
    assert bootstrap_interval([2.0, 2.0, 2.0], n_resamples=50) == (2.0, 2.0)


def test_summary_counts_not_estimable_initializations():
    s = summarize(_rows("s", [0.2, None, 0.4, None]), "gain", n_resamples=200)
    assert s.mean == pytest.approx(0.3) and s.n == 2
    assert s.not_estimable == {"1 admitted context, at least 2 are needed": 2}
    assert s.low <= 0.3 <= s.high
    none = summarize(_rows("s", [None]), "gain")
    assert none.mean is None and none.reason == "no estimable initializations"
    one = summarize(_rows("s", [0.5]), "gain")
    assert one.mean == 0.5 and one.low is None and one.interval_reason


def test_paired_difference_on_shared_initializations():
    a = _rows("s", [0.5, 0.6, None, 0.9])
    b = _rows("s", [0.1, 0.4, 0.3])
    d = paired_difference(a, b, "gain", n_resamples=200)
    assert d.mean == pytest.approx(0.3)  # (0.4 + 0.2) / 2
    assert d.not_estimable == {"1 admitted context, at least 2 are needed": 1,
                               "initialization absent from the second representation": 1}


def test_bad_arguments():
    with pytest.raises(BadArgument, match="at least 2"):
        bootstrap_interval([1.0])
    with pytest.raises(BadArgument, match="n_resamples"):
        bootstrap_interval([1.0, 2.0], n_resamples=0)
