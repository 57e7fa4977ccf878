"""Edges of the readout engine left open by the exact-value tests (second mutation run): the
order of skipped rows, thresholds near magnitude 1, counts above one, a single row, two
evaluation initializations, and the fields of every returned record."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.grid import ControlledGrid, context_endpoints, usable_contexts
from leaderboard.readout.logistic import fit_logistic
from leaderboard.readout.metrics import InitializationMetrics, Value, context_gains, initialization_metrics
from leaderboard.readout.predictors import Covariates, Outcome, failure_prediction
from leaderboard.readout.ridge import fit_ridge
from leaderboard.readout.sign_tests import HYPOTHESES, difference, primary_tests, sign_test, sign_test_p
from leaderboard.readout.summaries import paired_difference


def _rows(prefix, gains):
    out = []
    for i, g in enumerate(gains):
        v = Value(g, None if g is not None else "not estimable here")
        out.append(InitializationMetrics(f"{prefix}{i}", Value(1.0), Value(2.0), v, v, v, v, (), False, 1, 1))
    return out


def test_endpoint_records_carry_their_context_and_cells(make_grid):
    grid = make_grid(lambda c, q: q, contexts=(1, 2, 3), drop={(1, 5)}, drift={(2, 5): -46.0})
    missing, short, fine = (context_endpoints(grid, c, 5.0) for c in (1, 2, 3))
    assert (missing.context, missing.first, missing.last) == (1, grid.cell(1, 0), None)
    assert (short.context, short.first, short.last) == (2, grid.cell(2, 0), grid.cell(2, 5))
    assert (fine.context, fine.first, fine.last, fine.reason) == (3, grid.cell(3, 0), grid.cell(3, 5), None)
    assert [e.context for e in usable_contexts(grid, 0.5)] == [1, 2, 3]  # a separation below 1 is allowed


def test_grid_indices_are_integers_and_nested_arrays_are_flattened():
    g = ControlledGrid(context=[[0, 1]], grid_index=[[0.0, 5.0]], coordinate=[[0.0, 50.0]], prediction=[[1.0, 2.0]])
    assert g.grid_index.dtype == np.int64 and g.context.shape == (2,) and g.grid_index.shape == (2,)


def test_a_context_after_an_unusable_one_still_gets_its_gain(make_grid):
    grid = make_grid(lambda c, q: q, contexts=(0, 1, 2), drop={(0, 5)})
    gains = context_gains(grid, 5.0)
    assert [g.context for g in gains] == [0, 1, 2] and [g.gain for g in gains[1:]] == [1.0, 1.0]
    assert initialization_metrics("s9", [1.0], [1.0], grid, min_separation=5.0).to_dict()["initialization"] == "s9"


def test_one_logistic_row_of_one_outcome_is_refused_by_name():
    with pytest.raises(BadArgument, match="^outcomes: all 1, a logistic model needs both outcomes$"):
        fit_logistic(np.ones((1, 1)), np.array([1.0]))


def test_near_constant_covariates_follow_the_magnitude_rule():
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.normal(size=30), 1e6 + 1e-5 * rng.normal(size=30), 1.5e-10 * rng.choice([-1, 1], 30)])
    y = (x[:, 0] > 0).astype(float)
    model = fit_logistic(x, y)
    assert model.scale[1] == 1.0  # std ~1e-5 < 1e-10 x 1e6
    assert model.scale[2] == pytest.approx(x[:, 2].std())  # std about 1.5e-10 > 1e-10 x 1
    assert x[:, 2].std() < 2e-10
    r = fit_ridge(x, x[:, 0])
    assert r.kept.tolist() == [True, False, True]


def test_a_tie_is_within_1e_9_of_magnitude_at_least_1():
    assert difference(1.5e-9, 0.0) == 1.5e-9
    assert difference(0.5e-9, 0.0) == 0.0


def test_every_sign_test_names_its_hypothesis_and_balanced_counts_have_a_p_value():
    t = sign_test("x", "h", [1.0, -1.0])
    assert (t.n_positive, t.n_negative, t.p_value) == (1, 1, 0.75)
    assert sign_test("x", "h", [0.0]).hypothesis == "h"
    rows = _rows("s", [0.5, 0.7])
    gain, controlled = primary_tests("t/r", rows)
    assert (gain.hypothesis, controlled.hypothesis) == (HYPOTHESES["gain_below_one"],
                                                         HYPOTHESES["controlled_above_natural"])
    with pytest.raises(BadArgument, match="^counts: no non-zero difference, the sign test is undefined$"):
        sign_test_p(0, 0)


def test_paired_difference_goes_on_past_a_skipped_row_and_counts_every_absence():
    a = _rows("s", [0.9, None, 0.5, 0.3, 0.8, 0.1, 0.6, 0.2, 0.7])
    b = _rows("s", [0.4, 0.2, 0.1, 0.3, 0.6, 0.0, 0.5]) + _rows("t", [0.1, 0.2])
    d = paired_difference(a, b, "gain", n_resamples=300, seed=4)
    assert d.metric == "gain" and d.n == 6
    assert d.not_estimable == {"not estimable here": 1, "initialization absent from the second representation": 2,
                               "initialization absent from the first representation": 2}
    diffs = np.array([0.5, 0.4, 0.0, 0.2, 0.1, 0.1])
    means = diffs[np.random.default_rng(4).integers(0, 6, size=(300, 6))].mean(axis=1)
    assert (d.low, d.high) == tuple(float(v) for v in np.percentile(means, [2.5, 97.5]))
    other = paired_difference(a, b, "gain", n_resamples=300, seed=5)
    assert (d.low, d.high) != (other.low, other.high)


def _cov(name, shift):
    return Covariates(name, 1.0 + shift, 2.0 - shift, 3.0 + 0.5 * shift, 4.0 + shift, 0.5, 1.0 - shift)


def test_two_evaluation_initializations_have_an_interval_and_unknown_ones_are_all_counted():
    dev = [_cov(f"d{i}", i / 10) for i in range(12)]
    dev_out = [Outcome(f"d{i}", 0, i % 2 == 0) for i in range(12)]
    ev = [_cov("e0", 0.3), _cov("e1", 0.9)]
    ev_out = [Outcome("x", 0, True), Outcome("y", 0, False), Outcome("e0", 0, True), Outcome("e0", 1, False),
              Outcome("e1", 0, True)]
    r = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=50)
    assert r.left_out == {"eval: no covariates for the initialization": 2}
    assert (r.n_eval_rows, r.n_eval_initializations) == (3, 2)
    assert all(d.low is not None and d.high is not None for d in r.differences)


def test_a_context_missing_only_its_first_endpoint_keeps_its_last(make_grid):
    grid = make_grid(lambda c, q: q, contexts=(0, 1), drop={(0, 0)})
    ends = context_endpoints(grid, 0, 5.0)
    assert (ends.first, ends.last, ends.missing) == (None, grid.cell(0, 5), True)
    assert ends.reason == "context 0 lacks its endpoint at grid index 0"
