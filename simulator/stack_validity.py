"""Stack states must start physically valid, as Door states must (issue 38).

The same definition as `simulator.door_sim.check_valid_state`: no two bodies interpenetrating
deeper than `MAX_PENETRATION_M` at the start, and the objects (both cubes) still within
`STILL_TOLERANCE_M` over one second of neutral control (the hand held at home, gripper open).
"""

from __future__ import annotations

import numpy as np

from simulator.door_sim import MAX_PENETRATION_M, STILL_STEPS, deepest_contact
from simulator.errors import InvalidState
from simulator.stack_scenes import StackLayout
from simulator.stack_sim import StackSim

STILL_TOLERANCE_M = 0.001
"""Largest displacement of either cube over `STILL_STEPS` of neutral control (measured on
every published Stack state: at most 0.22 mm, the cubes settling on the table)."""


def check_valid_stack_state(sim: StackSim, layout: StackLayout, name: str) -> None:
    """Raise `InvalidState` unless `layout` restores without interpenetration deeper than
    `MAX_PENETRATION_M` and both cubes stay within `STILL_TOLERANCE_M` over one second of
    neutral control. Leaves `sim` restored."""
    sim.restore(layout)
    depth, pair = deepest_contact(sim)
    if depth > MAX_PENETRATION_M:
        sim.restore(layout)
        raise InvalidState(f"{name}: {pair} interpenetrate by {depth * 1000:.1f} mm at the start "
                           f"(at most {MAX_PENETRATION_M * 1000:.0f} mm)")
    start, pos, rot = sim.cube_pos(), sim.ee_pos(), sim.ee_rot()
    for _ in range(STILL_STEPS):
        sim.step(pos, rot, -1.0)
    moved = [float(np.linalg.norm(after - before)) for before, after in zip(start, sim.cube_pos())]
    sim.restore(layout)
    for cube, delta in zip("AB", moved):
        if delta > STILL_TOLERANCE_M:
            raise InvalidState(f"{name}: cube {cube} moves by {delta * 1000:.1f} mm in one second of "
                               f"neutral control (at most {STILL_TOLERANCE_M * 1000:.0f} mm)")
