"""Door demonstrations for one experience's policy: the Door expert, in that experience's style, around its base scene.

The Door counterpart of `runner.policy_demos` (same contract, same seeding).
Each demonstration moves the base scene's door (x and y up to `X_SHIFT` and
`Y_SHIFT`, yaw up to `YAW_SHIFT`; the base's hinge, latch and obstacle are
kept), plans the expert's path in the experience's style from the restored
door and executes it under perturbations (a constant xy offset per
demonstration and a per-step jitter), while every action is labelled towards
the unperturbed plan: the policy sees states off the plan and learns to
return to it. Only successful demonstrations are kept (robomimic's
convention).

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

from dataclasses import dataclass

import numpy as np

from runner.appearance import sample_draw
from runner.door_expert import DoorStyle, plan_door_path
from runner.door_scenes import DoorLayout
from runner.policy_demos import _seed, keep_successes
from runner.policy_model import Demo
from runner.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE, _rotvec

X_SHIFT = 0.08
"""Largest shift of the door's base along x (m)."""
Y_SHIFT = 0.05
"""Largest shift of the door's base along y (m)."""
YAW_SHIFT = 0.1
"""Largest change of the door's yaw (rad, about 6 degrees)."""
OFFSET_STD = 0.005
"""Std of the per-demonstration constant offset of the executed targets (m, x and y)."""
JITTER_STD = 0.003
"""Std of the per-step jitter of the executed targets (m, each axis)."""


@dataclass(frozen=True)
class DoorDemoPlan:
    """What one Door demonstration does: its layout, appearance draw and perturbation seed."""

    index: int
    layout: DoorLayout
    draw_key: str
    draw: int


def perturbed_door_layout(base: DoorLayout, rng: np.random.Generator) -> DoorLayout:
    """The base scene with its door moved (x, y, yaw); hinge, latch and obstacle kept."""
    x, y, yaw = base.door
    door = (x + rng.uniform(-X_SHIFT, X_SHIFT), y + rng.uniform(-Y_SHIFT, Y_SHIFT),
            yaw + rng.uniform(-YAW_SHIFT, YAW_SHIFT))
    return DoorLayout(tuple(float(v) for v in door), hinge=base.hinge, latch=base.latch,
                      obstacle=base.obstacle)


def plan_door_demos(experience_id: str, base: DoorLayout, n: int, randomized: bool) -> list[DoorDemoPlan]:
    """The first `n` Door demonstration plans of an experience (a pure function of its id)."""
    plans = []
    for i in range(n):
        rng = _seed("demo-layout", experience_id, i)
        layout = base if i == 0 else perturbed_door_layout(base, rng)
        draw = (i % 5) if randomized else 0
        plans.append(DoorDemoPlan(i, layout, f"train:{experience_id}:{i}", draw))
    return plans


def record_door_demo(sim, camera, plan: DoorDemoPlan, style: DoorStyle,
                     experience_id: str) -> tuple[Demo, bool]:
    """Execute one Door demonstration, rendering every step before acting; returns (demo, success)."""
    camera.set_draw(sample_draw(plan.draw_key, plan.draw))
    sim.restore(plan.layout)
    path = plan_door_path(sim.geometry(), style, sim.hinge(), sim.latch())
    rng = _seed("demo-noise", experience_id, plan.index)
    offset = rng.normal(0.0, OFFSET_STD, size=2)
    jitter = rng.normal(0.0, JITTER_STD, size=(len(path), 3))
    images, eef, grip, actions, objects = [], [], [], [], []
    for t, row in enumerate(path):
        pos, rot = sim.ee_pos(), sim.ee_rot()
        goal_rot = row[3:12].reshape(3, 3)
        images.append(camera.render())
        eef.append(pos)
        grip.append(sim.data.qpos[7:9].copy())
        objects.append(np.concatenate([sim.geometry()["handle"], [sim.hinge(), sim.latch()]]))
        delta_pos = np.clip((row[:3] - pos) / DELTA_POS_SCALE, -1, 1)
        delta_rot = np.clip(_rotvec(goal_rot @ rot.T) / DELTA_ROT_SCALE, -1, 1)
        actions.append(np.concatenate([delta_pos, delta_rot, [row[12]]]))
        target = row[:3] + jitter[t]
        target[:2] += offset
        sim.step(target, goal_rot.copy(), float(row[12]))
    demo = Demo(images=np.stack(images), eef_pos=np.asarray(eef), gripper_qpos=np.asarray(grip),
                actions=np.asarray(actions), object_state=np.asarray(objects))
    return demo, sim.success()


def collect_door_demos(sim, camera, experience_id: str, base: DoorLayout, style: DoorStyle,
                       n_success: int, randomized: bool, max_tries: int | None = None):
    """Record Door demonstrations until `n_success` succeed; returns (demos, plans used, tries)."""
    plans = plan_door_demos(experience_id, base, max_tries or 3 * n_success, randomized)
    return keep_successes(plans, lambda plan: record_door_demo(sim, camera, plan, style, experience_id),
                          n_success)
