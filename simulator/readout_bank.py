"""All observations of one readout initialization: natural frames, screened contexts, the grid.

`observe_initialization` is the unit of bank generation: it runs the expert from the
initialization (natural frames every `NATURAL_EVERY` steps and the final state), screens
the context candidates at both grid endpoints, chooses 4 contexts
(`readout_protocol.choose_contexts`), fills the 6 x 4 grid and re-runs one admitted cell
to check that a repeated state gives the same label, hash and pixels. Every cell is
returned with its admission checks and reason, admitted or not; images are kept for
admitted cells and natural frames only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.readout_cells import CellMeasure, Frame, Observer
from simulator.readout_inits import Initialization
from simulator.readout_protocol import (NATURAL_EVERY, THRESHOLDS, candidate_steps, choose_contexts,
                                        reject_reason)


@dataclass
class InitObservations:
    """Rows (dicts, no ids yet) and images of one initialization."""

    init: Initialization
    rows: list[dict] = field(default_factory=list)
    agentview: list[np.ndarray] = field(default_factory=list)
    wrist: list[np.ndarray] = field(default_factory=list)
    image_of_row: list[int] = field(default_factory=list)  # row index -> image index or -1
    repeat: dict = field(default_factory=dict)  # the repeated-state check
    contexts_screened: int = 0

    def add(self, row: dict, images) -> None:
        if images is None:
            self.image_of_row.append(-1)
        else:
            self.image_of_row.append(len(self.agentview))
            self.agentview.append(images[0])
            self.wrist.append(images[1])
        self.rows.append(row)


def _cell_row(task: str, measure: CellMeasure, context: int, context_step: int, screened: bool,
              grid_index: int) -> dict:
    reason = reject_reason(task, drift=measure.drift, max_object_speed=measure.max_object_speed,
                           max_joint_speed=measure.max_joint_speed, contact=measure.contact,
                           penetration_mm=measure.penetration_mm, visible_px=measure.visible_px)
    return {"kind": "controlled", "coordinate": measure.coordinate, "source": None, "episode": None,
            "frame": None, "context": context, "grid_index": grid_index, "target": measure.target,
            "admitted": reason == "", "reject_reason": reason, "drift": measure.drift,
            "max_object_speed": measure.max_object_speed, "max_joint_speed": measure.max_joint_speed,
            "contact": measure.contact,
            "visible": measure.visible_px >= THRESHOLDS[task].min_visible_px,
            "visible_px": measure.visible_px, "penetration_mm": measure.penetration_mm,
            "gripper_distance": measure.gripper_distance,
            "context_step": context_step, "context_screened": screened,
            "state_hash": measure.state_hash}


def observe_initialization(observer: Observer, init: Initialization, grid: np.ndarray) -> InitObservations:
    """Natural frames and the controlled grid of one initialization (module docstring)."""
    task = observer.task
    out = InitObservations(init)
    frames: list[Frame] = []
    for frame, images in observer.natural(init, NATURAL_EVERY[task]):
        frames.append(frame)
        if images is not None:
            out.add({"kind": "natural", "coordinate": frame.coordinate, "source": "expert",
                     "episode": 0, "frame": frame.step, "gripper_distance": frame.gripper_distance,
                     "state_hash": observer.sim.state_hash()},
                    images)
    candidates = candidate_steps(len(frames) - 1)
    endpoints: dict[tuple[int, int], tuple[CellMeasure, tuple]] = {}
    passed = []
    for step in candidates:
        ok = True
        for g in (0, len(grid) - 1):
            measure, images = observer.controlled(init, float(grid[g]), frames[step])
            endpoints[(step, g)] = (measure, images)
            ok = ok and _cell_row(task, measure, 0, step, True, g)["admitted"]
        passed.append(ok)
    chosen = choose_contexts(candidates, passed)
    out.contexts_screened = sum(s for _, s in chosen)
    first_admitted = None
    for c, (step, screened) in enumerate(chosen):
        for g, value in enumerate(grid):
            if (step, g) in endpoints:
                measure, images = endpoints[(step, g)]
            else:
                measure, images = observer.controlled(init, float(value), frames[step])
            row = _cell_row(task, measure, c, step, screened, g)
            out.add(row, images if row["admitted"] else None)
            if row["admitted"] and first_admitted is None:
                first_admitted = (len(out.rows) - 1, step, float(value))
    if first_admitted is not None:
        index, step, value = first_admitted
        measure, images = observer.controlled(init, value, frames[step])
        stored = out.rows[index]
        k = out.image_of_row[index]
        out.repeat = {"cells": 1,
                      "label_equal": measure.coordinate == stored["coordinate"],
                      "hash_equal": measure.state_hash == stored["state_hash"],
                      "pixels_equal": bool(np.array_equal(images[0], out.agentview[k])
                                           and np.array_equal(images[1], out.wrist[k]))}
    else:
        out.repeat = {"cells": 0, "label_equal": True, "hash_equal": True, "pixels_equal": True}
    return out
