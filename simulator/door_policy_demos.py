"""Door demonstrations for one experience's policy: the Door expert, in that experience's style, around its base scene.

The Door task's part of `simulator.demo_recording` (the Stack one is `simulator.stack_policy_demos`).
Each demonstration moves the base scene's door (x and y up to `X_SHIFT` and
`Y_SHIFT`, yaw up to `YAW_SHIFT`; the base's hinge, latch and obstacle are
kept) and records the expert's path in the experience's style, planned from
the restored door (`simulator.demo_recording`: perturbed execution, actions
labelled towards the plan, successes kept). The encoder's pretraining target
is the handle's position, the hinge and the latch.

The shifts cover about two thirds of the displaced query level's x range
(x +-12 cm, y +-6 cm, yaw +-0.1 rad) around the experience's own scene, a
range where the expert still succeeds on its own; queries farther from an
experience's base scene test how far its policy generalizes.

Appearance: Policy demonstrations are rendered with the nominal appearance;
Policy+DR demonstrations each with a randomized draw from the same machinery
as the query draws, seeded from a separate namespace (`train:<experience>:<n>`),
never from a query state id.
"""

from __future__ import annotations

import numpy as np

from simulator import demo_recording
from simulator.demo_recording import DemoPlan, DemoTask, Target
from simulator.door_expert import DoorStyle, plan_door_path
from simulator.door_scenes import DoorLayout
from simulator.policy_model import Demo

X_SHIFT = 0.08
"""Largest shift of the door's base along x (m)."""
Y_SHIFT = 0.05
"""Largest shift of the door's base along y (m)."""
YAW_SHIFT = 0.1
"""Largest change of the door's yaw (rad, about 6 degrees)."""


def perturbed_door_layout(base: DoorLayout, rng: np.random.Generator) -> DoorLayout:
    """The base scene with its door moved (x, y, yaw); hinge, latch and obstacle kept."""
    x, y, yaw = base.door
    door = (x + rng.uniform(-X_SHIFT, X_SHIFT), y + rng.uniform(-Y_SHIFT, Y_SHIFT),
            yaw + rng.uniform(-YAW_SHIFT, YAW_SHIFT))
    return DoorLayout(tuple(float(v) for v in door), hinge=base.hinge, latch=base.latch,
                      obstacle=base.obstacle)


def _expert_targets(sim, layout: DoorLayout, style: DoorStyle) -> list[Target]:
    path = plan_door_path(sim.geometry(), style, sim.hinge(), sim.latch())
    return [(row[:3], row[3:12].reshape(3, 3), float(row[12])) for row in path]


def _object_state(sim) -> np.ndarray:
    return np.concatenate([sim.geometry()["handle"], [sim.hinge(), sim.latch()]])


DOOR_DEMOS = DemoTask(perturb=perturbed_door_layout, expert_targets=_expert_targets,
                      object_state=_object_state)
"""The Door task's part of the demonstration recorder."""


def plan_door_demos(experience_id: str, base: DoorLayout, n: int, randomized: bool) -> list[DemoPlan]:
    """The first `n` Door demonstration plans of an experience (a pure function of its id)."""
    return demo_recording.plan_demos(DOOR_DEMOS, experience_id, base, n, randomized)


def record_door_demo(sim, camera, plan: DemoPlan, style: DoorStyle,
                     experience_id: str) -> tuple[Demo, bool]:
    """Execute one Door demonstration, rendering every step before acting; returns (demo, success)."""
    return demo_recording.record_demo(DOOR_DEMOS, sim, camera, plan, style, experience_id)


def collect_door_demos(sim, camera, experience_id: str, base: DoorLayout, style: DoorStyle,
                       n_success: int, randomized: bool, max_tries: int | None = None):
    """Record Door demonstrations until `n_success` succeed; returns (demos, plans used, tries)."""
    return demo_recording.collect_demos(DOOR_DEMOS, sim, camera, experience_id, base, style,
                                        n_success, randomized, max_tries)
