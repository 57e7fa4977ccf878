"""Summaries and paired differences to the exact value: the dictionary a report carries, the
reasons and counts of what is left out, the interval's parameters passed through, and the
words of every refusal."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.metrics import InitializationMetrics, Value
from leaderboard.readout.summaries import Summary, bootstrap_interval, paired_difference, summarize

REASON = "1 admitted context, at least 2 are needed"


def _rows(prefix, gains, reason=REASON):
    out = []
    for i, g in enumerate(gains):
        v = Value(g, None if g is not None else reason)
        out.append(InitializationMetrics(f"{prefix}{i}", Value(1.0), Value(2.0), v, v, v, v, (), False, 1, 1))
    return out


def _percentiles(values, n, seed, confidence):
    x = np.asarray(values, dtype=np.float64)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(n, len(x)))].mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    return tuple(float(v) for v in np.percentile(means, [tail, 100 - tail]))


def test_the_default_interval_is_2000_resamples_seed_0_at_95_percent():
    values = [0.1, 0.5, 0.2, 0.9, 0.4]
    assert (defaults.N_BOOTSTRAP, defaults.SEED, defaults.CONFIDENCE) == (2000, 0, 0.95)
    assert bootstrap_interval(values) == _percentiles(values, 2000, 0, 0.95)
    assert bootstrap_interval(values, confidence=0.5) == _percentiles(values, 2000, 0, 0.5)
    assert bootstrap_interval(np.array([[0.1, 0.5], [0.2, 0.9]])) == _percentiles([0.1, 0.5, 0.2, 0.9], 2000, 0, 0.95)


@pytest.mark.parametrize("kwargs, words", [
    ({"values": [1.0]}, "values: 1 given, a bootstrap interval needs at least 2"),
    ({"values": [1.0, float("nan")]}, "values: holds NaN or infinite values"),
    ({"values": [1.0, 2.0], "n_resamples": 0}, "n_resamples: must be a positive integer, got 0"),
    ({"values": [1.0, 2.0], "confidence": 1.0}, r"confidence: must lie in \(0, 1\), got 1.0"),
    ({"values": [1.0, 2.0], "confidence": 0.0}, r"confidence: must lie in \(0, 1\), got 0.0"),
])
def test_bootstrap_refusals_name_the_bad_field(kwargs, words):
    with pytest.raises(BadArgument, match=f"^{words}$"):
        bootstrap_interval(**kwargs)


def test_one_resample_is_allowed():
    assert bootstrap_interval([1.0, 3.0], n_resamples=1, seed=2) == _percentiles([1.0, 3.0], 1, 2, 0.95)


def test_summary_dictionary_is_the_reports():
    s = Summary("gain", 0.5, 0.4, 0.6, 3, None, None, {"b": 1, "a": 2})
    assert s.to_dict() == {"metric": "gain", "mean": 0.5, "low": 0.4, "high": 0.6, "n": 3, "reason": None,
                           "interval_reason": None, "not_estimable": {"a": 2, "b": 1}}
    assert list(s.to_dict()["not_estimable"]) == ["a", "b"]


def test_summarize_passes_its_resamples_and_seed_to_the_interval():
    rows = _rows("s", [0.2, None, 0.4, 0.9])
    s = summarize(rows, "gain", n_resamples=300, seed=5)
    assert (s.metric, s.n, s.reason, s.interval_reason) == ("gain", 3, None, None)
    assert s.mean == pytest.approx(0.5)
    assert (s.low, s.high) == _percentiles([0.2, 0.4, 0.9], 300, 5, 0.95)
    assert s.not_estimable == {REASON: 1}
    assert summarize(rows, "gain") == summarize(rows, "gain", n_resamples=2000, seed=0)


def test_summarize_with_none_or_one_estimable_initialization():
    none = summarize(_rows("s", [None, None]), "gain")
    assert none == Summary("gain", None, None, None, 0, reason="no estimable initializations",
                           not_estimable={REASON: 2})
    one = summarize(_rows("s", [0.7, None]), "gain")
    assert one == Summary("gain", 0.7, None, None, 1, interval_reason="one estimable initialization: no interval",
                          not_estimable={REASON: 1})


def test_paired_difference_is_first_minus_second_with_every_left_out_counted():
    a = _rows("s", [0.9, 0.5, None, 0.3])
    b = _rows("s", [0.4, None, 0.2]) + _rows("t", [0.1])
    d = paired_difference(a, b, "gain", n_resamples=200, seed=1)
    assert (d.mean, d.n) == (pytest.approx(0.5), 1)  # only s0 is shared and estimable in both
    assert d.not_estimable == {REASON: 2, "initialization absent from the second representation": 1,
                               "initialization absent from the first representation": 1}
    assert d.interval_reason.startswith("one ") and d.interval_reason.endswith(": no interval")
    assert d.low is None and d.high is None


def test_paired_difference_interval_uses_its_resamples_and_seed():
    a, b = _rows("s", [0.9, 0.5, 0.8]), _rows("s", [0.4, 0.1, 0.6])
    d = paired_difference(a, b, "gain", n_resamples=300, seed=4)
    assert d.mean == pytest.approx(np.mean([0.5, 0.4, 0.2]))
    assert (d.low, d.high) == _percentiles([0.9 - 0.4, 0.5 - 0.1, 0.8 - 0.6], 300, 4, 0.95)
    assert paired_difference(a, b, "gain") == paired_difference(a, b, "gain", n_resamples=2000, seed=0)
    assert paired_difference(b, a, "gain", n_resamples=300, seed=4).mean == pytest.approx(-d.mean)


def test_paired_difference_with_nothing_shared_says_so():
    d = paired_difference(_rows("s", [0.9]), _rows("t", [0.4]), "gain")
    assert (d.mean, d.n, d.reason) == (None, 0, "no initializations estimable in both")
    assert d.not_estimable == {"initialization absent from the second representation": 1,
                               "initialization absent from the first representation": 1}
