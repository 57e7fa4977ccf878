"""The per-initialization metrics and the grid rule to the exact value: the dictionaries a
report carries, the threshold cases (separation equal to the minimum, a spread equal to the
constant tolerance), hand-computed slopes and gains with drift, and every reason's words."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.grid import ControlledGrid, context_endpoints, grid_reason, usable_contexts
from leaderboard.readout.metrics import (CONSTANT_NOTE, ContextGain, Value, context_gains, initialization_metrics,
                                         is_constant, mae_natural)


def test_value_and_context_gain_dictionaries():
    assert Value(0.5).to_dict() == {"value": 0.5, "reason": None}
    assert Value(None, "why").to_dict() == {"value": None, "reason": "why"}
    assert ContextGain(2, 0.7).to_dict() == {"context": 2, "gain": 0.7, "reason": None}
    assert ContextGain(1, None, "why").to_dict() == {"context": 1, "gain": None, "reason": "why"}


def test_mae_natural_by_hand_and_its_refusals():
    assert mae_natural([1.0, 4.0, 2.0], [2.0, 2.0, 2.0]) == Value(1.0)
    assert mae_natural([], []) == Value(None, "no natural observations")
    with pytest.raises(BadArgument, match="^natural prediction: 2 values for 3 coordinates$"):
        mae_natural([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(BadArgument, match="^natural prediction: holds NaN or infinite values$"):
        mae_natural([np.nan], [1.0])
    with pytest.raises(BadArgument, match="^natural coordinate: holds NaN or infinite values$"):
        mae_natural([1.0], [np.inf])


def test_constant_is_a_spread_within_the_tolerance_of_the_largest_magnitude():
    assert not is_constant(np.array([]))
    assert is_constant(np.array([1e9, 1e9 + 1.0]))  # spread 1 = 1e-9 x 1e9
    assert not is_constant(np.array([1e9, 1e9 + 2.0]))
    assert is_constant(np.array([0.0, 1e-9]))  # magnitudes below 1 count as 1
    assert not is_constant(np.array([0.0, 2e-9]))
    assert is_constant(np.array([-5.0, -5.0]))


def test_gain_slope_and_sensitivity_by_hand_with_drift(make_grid):
    # prediction 0.5 q + 3 c; context 1's top endpoint drifts to 52
    grid = make_grid(lambda c, q: 0.5 * q + 3 * c, contexts=(0, 1), drift={(1, 5): 2.0})
    gains = context_gains(grid, 5.0)
    assert gains == (ContextGain(0, 0.5), ContextGain(1, 0.5))
    m = initialization_metrics("s", [1.0, 2.0], [1.5, 2.5], grid, min_separation=5.0)
    assert (m.n_natural, m.n_cells, m.initialization) == (2, 12, "s")
    assert m.mae_natural == Value(0.5)
    q, p = np.array(grid.coordinate), np.array(grid.prediction)
    assert m.slope.value == pytest.approx(((q - q.mean()) @ (p - p.mean())) / ((q - q.mean()) @ (q - q.mean())))
    # ranges over the contexts per grid index: 3 at five indices, 29 - 25 = 4 at the drifted one
    assert m.context_sensitivity.value == pytest.approx((5 * 3.0 + 4.0) / 6)
    assert m.mae_controlled.value == pytest.approx(np.mean(np.abs(grid.prediction - q)))
    assert m.gain_error.value == pytest.approx(0.5)
    d = m.to_dict()
    assert d["gain"] == {"value": 0.5, "reason": None} and d["n_cells"] == 12 and d["n_natural"] == 2
    assert d["gain_by_context"] == [{"context": 0, "gain": 0.5, "reason": None},
                                    {"context": 1, "gain": 0.5, "reason": None}]
    assert "note" not in d and d["constant_readout"] is False


def test_a_slope_off_the_identity(make_grid):
    grid = make_grid(lambda c, q: q * q / 50.0, contexts=(0, 1))
    q, p = np.array(grid.coordinate), np.array(grid.prediction)
    expected = ((q - q.mean()) @ (p - p.mean())) / ((q - q.mean()) @ (q - q.mean()))
    assert initialization_metrics("s", [], [], grid, min_separation=5.0).slope.value == pytest.approx(expected)


def test_a_constant_readouts_dictionary_carries_the_note(make_grid):
    m = initialization_metrics("s", [1.0], [1.0], make_grid(lambda c, q: 7.0), min_separation=5.0)
    assert m.constant_readout and m.to_dict()["note"] == CONSTANT_NOTE
    assert (m.gain.value, m.context_sensitivity.value) == (0.0, 0.0)
    with pytest.raises(BadArgument, match="^metric: unknown name 'gains', expected one of mae_natural, "
                                          "mae_controlled, gain, gain_error, context_sensitivity, slope$"):
        m.metric("gains")
    assert m.metric("slope") is m.slope


def test_the_grid_refuses_bad_arrays_by_name():
    ok = dict(context=[0, 1], grid_index=[0, 5], coordinate=[0.0, 50.0], prediction=[0.0, 50.0])
    g = ControlledGrid(**{**ok, "context": [0.0, 1.0]})
    assert g.context.dtype == np.int64 and g.coordinate.dtype == np.float64
    with pytest.raises(BadArgument, match=r"^grid arrays differ in length: \{'context': 2, 'grid_index': 2, "
                                          r"'coordinate': 1, 'prediction': 2\}$"):
        ControlledGrid(**{**ok, "coordinate": [0.0]})
    with pytest.raises(BadArgument, match="^grid prediction: holds NaN or infinite values$"):
        ControlledGrid(**{**ok, "prediction": [0.0, np.nan]})
    with pytest.raises(BadArgument, match="^grid coordinate: holds NaN or infinite values$"):
        ControlledGrid(**{**ok, "coordinate": [np.inf, 0.0]})
    with pytest.raises(BadArgument, match=r"^grid context: value 4 outside 0\.\.3$"):
        ControlledGrid(**{**ok, "context": [0, 4]})
    with pytest.raises(BadArgument, match=r"^grid context: value -1 outside 0\.\.3$"):
        ControlledGrid(**{**ok, "context": [-1, 0]})
    with pytest.raises(BadArgument, match=r"^grid grid_index: value 6 outside 0\.\.5$"):
        ControlledGrid(**{**ok, "grid_index": [0, 6]})
    with pytest.raises(BadArgument, match=r"^grid: a \(context, grid_index\) cell appears twice$"):
        ControlledGrid(**{**ok, "context": [1, 1], "grid_index": [5, 5]})
    # context 0 index 5 and context 1 index -1 would share a key without the range check
    assert ControlledGrid(context=[0, 1], grid_index=[5, 0], coordinate=[1.0, 2.0], prediction=[1.0, 2.0]).cell(1, 0) == 1


def test_endpoint_reasons_and_the_separation_boundary(make_grid):
    grid = make_grid(lambda c, q: q, contexts=(0, 1, 2), drop={(0, 0), (0, 5)}, drift={(2, 5): -45.0})
    assert context_endpoints(grid, 0, 5.0).reason == "context 0 lacks its endpoint at grid index 0 and 5"
    assert context_endpoints(grid, 0, 5.0).missing
    assert context_endpoints(grid, 2, 5.0).reason is None  # 5 apart: exactly the minimum is enough
    short = context_endpoints(grid, 2, 5.5)
    assert short.reason == "context 2's endpoints are 5 apart, below the minimum separation 5.5"
    assert not short.missing and (short.first, short.last) == (grid.cell(2, 0), grid.cell(2, 5))
    with pytest.raises(BadArgument, match="^min_separation: must be positive, got 0$"):
        usable_contexts(grid, 0)


def test_grid_reasons_name_the_first_failing_condition(make_grid):
    q = lambda c, v: v  # noqa: E731
    only_one = make_grid(q, contexts=(0, 1), drop={(0, 5)})
    assert grid_reason(only_one, 5.0) == "1 context with both endpoints admitted, at least 2 are needed"
    none = make_grid(q, contexts=(0, 1), drop={(0, 0), (1, 5)})
    assert grid_reason(none, 5.0) == ("no context has both endpoints admitted "
                                      "(context 0 lacks its endpoint at grid index 0)")
    close = make_grid(q, contexts=(0, 1), drift={(0, 5): -46.0})
    assert grid_reason(close, 5.0) == ("1 context with endpoints at least the minimum separation apart, at least 2 "
                                       "are needed (context 0's endpoints are 4 apart, below the minimum "
                                       "separation 5)")
    closer = make_grid(q, contexts=(0, 1), drift={(0, 5): -46.0, (1, 5): -46.0})
    assert grid_reason(closer, 5.0).startswith("0 contexts with endpoints at least the minimum separation apart")
    assert grid_reason(make_grid(q, contexts=(0, 1)), 5.0) is None
    m = initialization_metrics("s", [1.0], [1.0], only_one, min_separation=5.0)
    assert m.gain == Value(None, "1 context with both endpoints admitted, at least 2 are needed")
    assert m.gain_by_context[0] == ContextGain(0, None, "context 0 lacks its endpoint at grid index 5")
