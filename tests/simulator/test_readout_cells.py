"""Controlled cells and natural frames of the readout banks, on one initialization."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.readout_protocol import (CONTEXT_CANDIDATES, THRESHOLDS, candidate_steps, choose_contexts,
                                        grid_values, reject_reason)

GOOD = dict(drift=0.0, max_object_speed=0.0, max_joint_speed=0.0, contact=False, penetration_mm=0.1,
            visible_px=100)


def test_reject_reason_names_every_failed_check():
    assert reject_reason("door", **GOOD) == ""
    bad = dict(GOOD, contact=True, drift=3.0, visible_px=2)
    reason = reject_reason("door", **bad)
    assert "robot-target contact" in reason and "drift 3.000" in reason and "visible in 2 px" in reason
    assert reject_reason("stack", **dict(GOOD, max_joint_speed=1.0)).startswith("joint speed")


def test_grid_spans_the_central_percentiles_clipped_to_the_joint():
    coords = np.concatenate([np.full(50, -0.02), np.linspace(0, 20, 50)])
    grid = grid_values("door", coords)
    assert grid[0] == 0.0 and len(grid) == 6 and np.all(np.diff(grid) > 0)
    with pytest.raises(ValueError, match="natural_coordinates"):
        grid_values("stack", np.array([1.0, np.nan]))


def test_contexts_prefer_screened_candidates_spread_over_the_trajectory():
    steps = candidate_steps(120)
    assert len(steps) == CONTEXT_CANDIDATES and steps[0] == 0 and steps[-1] == 120
    passed = [True, True, False, False, False, True, True, False, True, False, False, False, True]
    chosen = choose_contexts(steps, passed)
    assert [s for s, ok in chosen if ok] == [0, 50, 60, 120]
    few = choose_contexts(steps, [False] * 12 + [True])
    assert few[0] == (120, True) and [ok for _, ok in few] == [True, False, False, False]


@pytest.fixture(scope="module")
def door():
    from simulator.readout_cells import Observer
    from simulator.readout_inits import make_sim

    observer = Observer(make_sim("door"), "door")
    yield observer
    observer.close()


@pytest.mark.sim
def test_a_controlled_cell_holds_its_coordinate_and_repeats_bit_for_bit(door):
    from simulator.readout_inits import initialization

    init = initialization("door", "train", 3)
    frames = [f for f, _ in door.natural(init, 1000)]
    home = frames[0]
    m1, (a1, w1) = door.controlled(init, 9.6, home)
    m2, (a2, w2) = door.controlled(init, 9.6, home)
    assert m1.drift <= THRESHOLDS["door"].max_drift and not m1.contact
    assert m1 == m2 and np.array_equal(a1, a2) and np.array_equal(w1, w2)
    assert a1.shape == w1.shape == (64, 64, 3) and a1.dtype == np.uint8
    assert door.sim.model.jnt_stiffness[door._latch_jnt] == door._latch_stiffness  # spring restored
    assert np.array_equal(door.sim.home_q, np.array(door.sim.env.robots[0].init_qpos))


@pytest.mark.sim
def test_a_cell_that_fails_validation_is_recorded_with_its_reason(door):
    """The arm grasping the handle at the far end of the grid pushes the door: the cell is kept,
    not admitted, with the contact named."""
    from simulator.readout_bank import observe_initialization
    from simulator.readout_inits import initialization

    init = initialization("door", "train", 0)
    out = observe_initialization(door, init, np.array([0.0, 3.2, 6.4, 9.6, 12.8, 22.0]))
    cells = [r for r in out.rows if r["kind"] == "controlled"]
    assert len(cells) == 24  # 6 x 4, admitted or not
    rejected = [r for r in cells if not r["admitted"]]
    assert rejected and all(r["reject_reason"] for r in rejected)
    images = [k for r, k in zip(out.rows, out.image_of_row) if r["kind"] == "controlled"]
    assert all((k >= 0) == r["admitted"] for r, k in zip(cells, images))
    assert out.repeat == {"cells": 1, "label_equal": True, "hash_equal": True, "pixels_equal": True}
    natural = [r for r in out.rows if r["kind"] == "natural"]
    assert natural[0]["frame"] == 0 and natural[-1]["frame"] > natural[-2]["frame"]
