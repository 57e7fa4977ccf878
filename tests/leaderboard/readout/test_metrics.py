"""Every per-initialization metric against hand-computed grids (READOUT_SPEC, "Metrics").

The grids cross targets 0, 10, ..., 50 with contexts 0..3 (conftest); minimum separation 5.
"""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.grid import ControlledGrid, grid_reason
from leaderboard.readout.metrics import CONSTANT_NOTE, METRIC_NAMES, initialization_metrics, mae_natural

SEP = 5.0
CONTROLLED = METRIC_NAMES[1:]


def measure(grid, natural_p=(1.0, 2.0, 3.0), natural_y=(1.0, 1.0, 1.0), min_separation=SEP):
    return initialization_metrics("s0", natural_p, natural_y, grid, min_separation=min_separation)


def values(m):
    return {name: m.metric(name).value for name in METRIC_NAMES}


def test_perfect_readout(make_grid):
    m = measure(make_grid(lambda c, q: q))
    assert values(m) == {"mae_natural": 1.0, "mae_controlled": 0.0, "gain": 1.0, "gain_error": 0.0,
                         "context_sensitivity": 0.0, "slope": pytest.approx(1.0)}
    assert [g.gain for g in m.gain_by_context] == [1.0, 1.0, 1.0, 1.0]
    assert not m.constant_readout
    assert "note" not in m.to_dict()


def test_constant_readout_is_flagged(make_grid):
    m = measure(make_grid(lambda c, q: 7.0))
    assert m.gain.value == 0.0 and m.context_sensitivity.value == 0.0
    assert m.gain_error.value == 1.0 and m.slope.value == 0.0
    # mean |7 - q| over q = 0..50 step 10: (7 + 3 + 13 + 23 + 33 + 43) / 6
    assert m.mae_controlled.value == pytest.approx(122.0 / 6.0)
    assert m.constant_readout
    assert m.to_dict()["note"] == CONSTANT_NOTE
    assert "gain" in CONSTANT_NOTE and "context sensitivity" in CONSTANT_NOTE


def test_context_only_readout(make_grid):
    m = measure(make_grid(lambda c, q: 10.0 * c))
    assert [g.gain for g in m.gain_by_context] == [0.0, 0.0, 0.0, 0.0]
    assert m.gain.value == 0.0 and m.gain_error.value == 1.0
    assert m.context_sensitivity.value == 30.0  # at every q the contexts predict 0, 10, 20, 30
    assert m.slope.value == pytest.approx(0.0, abs=1e-12)
    # mean over c, q of |10c - q|: per context 150, 110, 90, 90 over 6 cells
    assert m.mae_controlled.value == pytest.approx((150 + 110 + 90 + 90) / 24.0)
    assert not m.constant_readout  # it moves, only not with the coordinate


def test_over_and_under_response_cancel_in_gain_not_in_gain_error(make_grid):
    m = measure(make_grid(lambda c, q: 2.0 * q if c < 2 else 25.0))
    assert [g.gain for g in m.gain_by_context] == [2.0, 2.0, 0.0, 0.0]
    assert m.gain.value == 1.0
    assert m.gain_error.value == 1.0
    # ranges |2q - 25| at q = 0..50: 25, 5, 15, 35, 55, 75
    assert m.context_sensitivity.value == pytest.approx(210.0 / 6.0)


def test_signed_gain_uses_actual_endpoint_coordinates(make_grid):
    grid = make_grid(lambda c, q: 0.5 * q, drift={(1, 0): 2.0, (1, 5): -4.0})
    m = measure(grid)
    # context 1: q_1 = 2, q_6 = 46, p = q / 2 -> (23 - 1) / (46 - 2) = 0.5; every other context 0.5
    assert [g.gain for g in m.gain_by_context] == [0.5, 0.5, 0.5, 0.5]
    reversed_grid = make_grid(lambda c, q: 40.0 - 0.25 * q)
    assert measure(reversed_grid).gain.value == -0.25
    assert measure(reversed_grid).gain_error.value == 1.25


def test_slope_pools_every_admitted_cell(make_grid):
    m = measure(make_grid(lambda c, q: 2.0 * q + 10.0 * c))
    assert m.slope.value == pytest.approx(2.0)
    assert m.gain.value == pytest.approx(2.0)
    assert m.context_sensitivity.value == pytest.approx(30.0)


def test_interior_cell_not_admitted_keeps_the_grid(make_grid):
    grid = make_grid(lambda c, q: q + (8.0 if c == 3 else 0.0), drop=[(3, 2), (0, 2), (1, 2)])
    m = measure(grid)
    assert m.gain.value == 1.0
    # grid index 2 has one context left and is skipped; the other five have range 8
    assert m.context_sensitivity.value == 8.0
    assert m.mae_controlled.value == pytest.approx(8.0 * 5 / 21)


def test_context_missing_an_endpoint_is_left_out_of_the_gains(make_grid):
    # contexts 0, 1 respond 2x, context 2 not at all, context 3 lacks its last endpoint
    m = measure(make_grid(lambda c, q: 2.0 * q if c < 2 else 25.0, drop=[(3, 5)]))
    gains = {g.context: g for g in m.gain_by_context}
    assert gains[3].gain is None and gains[3].reason == "context 3 lacks its endpoint at grid index 5"
    assert m.gain.value == pytest.approx(4.0 / 3.0)  # (2 + 2 + 0) / 3
    assert m.gain_error.value == pytest.approx(1.0)  # (1 + 1 + 1) / 3
    # every admitted cell still counts for the accuracy, the slope and the sensitivity
    assert m.mae_controlled.value is not None and m.slope.value is not None
    assert m.mae_natural.value == 1.0


def test_no_context_with_both_endpoints(make_grid):
    m = measure(make_grid(lambda c, q: q, drop=[(0, 0), (1, 5), (2, 0), (3, 5)]))
    for name in CONTROLLED:
        assert m.metric(name).value is None
        assert m.metric(name).reason == ("no context has both endpoints admitted "
                                         "(context 0 lacks its endpoint at grid index 0)")
    assert m.mae_natural.value == 1.0


def test_both_endpoints_missing_are_named(make_grid):
    m = measure(make_grid(lambda c, q: q, drop=[(1, 0), (1, 5)]))
    assert {g.context: g.reason for g in m.gain_by_context}[1] == "context 1 lacks its endpoint at grid index 0 and 5"
    assert m.gain.value == 1.0


def test_one_context_with_both_endpoints_is_not_enough(make_grid):
    m = measure(make_grid(lambda c, q: q, drop=[(0, 5), (1, 5), (2, 0)]))
    assert m.gain.value is None
    assert m.gain.reason == "1 context with both endpoints admitted, at least 2 are needed"


def test_endpoints_closer_than_the_minimum_separation(make_grid):
    m = measure(make_grid(lambda c, q: q), min_separation=50.5)
    assert m.gain.value is None
    assert m.gain.reason == ("0 contexts with endpoints at least the minimum separation apart, at least 2 are "
                             "needed (context 0's endpoints are 50 apart, below the minimum separation 50.5)")
    exactly = measure(make_grid(lambda c, q: q), min_separation=50.0)
    assert exactly.gain.value == 1.0  # the bound itself is allowed


def test_one_context_drifting_too_close_is_left_out(make_grid):
    grid = make_grid(lambda c, q: q if c < 3 else 0.0, drift={(3, 5): -47.0})  # context 3: q_6 = 3
    m = measure(grid)
    assert m.gain.value == 1.0 and m.gain_error.value == 0.0
    assert {g.context: g.reason for g in m.gain_by_context}[3].startswith("context 3's endpoints are 3 apart")
    too_close = make_grid(lambda c, q: q, drift={(2, 5): -47.0, (3, 5): -47.0, (1, 0): 48.0})
    assert measure(too_close).gain.reason.startswith("1 context with endpoints at least the minimum separation")


def test_fewer_than_two_admitted_contexts(make_grid):
    m = measure(make_grid(lambda c, q: q, contexts=(2,)))
    assert m.gain.value is None and m.gain.reason == "1 context with both endpoints admitted, at least 2 are needed"
    assert m.mae_controlled.value is None
    assert [g.gain for g in m.gain_by_context] == [1.0]
    empty = measure(ControlledGrid([], [], [], []))
    assert empty.slope.reason == "no context has both endpoints admitted"
    assert not empty.constant_readout


def test_two_contexts_are_enough(make_grid):
    assert measure(make_grid(lambda c, q: q, contexts=(0, 3))).gain.value == 1.0


def test_mae_natural():
    assert mae_natural([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]).value == 1.0
    assert mae_natural([-1.0, 4.0], [1.0, 1.0]).value == 2.5
    none = mae_natural([], [])
    assert none.value is None and none.reason == "no natural observations"


def test_bad_inputs_name_the_field():
    with pytest.raises(BadArgument, match="grid_index: value 6 outside 0..5"):
        ControlledGrid([0], [6], [1.0], [1.0])
    with pytest.raises(BadArgument, match="appears twice"):
        ControlledGrid([0, 0], [1, 1], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(BadArgument, match="grid prediction: holds NaN"):
        ControlledGrid([0], [1], [1.0], [np.nan])
    with pytest.raises(BadArgument, match="min_separation: must be positive"):
        grid_reason(ControlledGrid([], [], [], []), 0.0)
    with pytest.raises(BadArgument, match="natural prediction: 2 values for 1 coordinates"):
        mae_natural([1.0, 2.0], [1.0])
