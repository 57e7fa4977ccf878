"""Demonstrations for one experience's policy: the expert, in that experience's style, around its base scene.

Each demonstration moves the base scene's cubes (one common shift up to
`COMMON_SHIFT` plus an independent one up to `OWN_SHIFT` per cube, yaw up to
`YAW_SHIFT`), plans the expert's path in the experience's style and executes
it under perturbations (a constant offset per demonstration and a per-step
jitter), while every action is labelled towards the unperturbed plan: the
policy sees states off the plan and learns to return to it. Only successful
demonstrations are kept (robomimic's convention).

Appearance: Policy demonstrations are rendered with the nominal appearance;
Policy+DR demonstrations each with a randomized draw (lighting, colours,
textures, camera) from the same machinery as the query draws, seeded from a
separate namespace (`train:<experience>:<n>`), never from a query state id.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from runner.appearance import sample_draw
from runner.osc import yaw_down_rotation
from runner.policy_model import Demo
from runner.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE, _rotvec
from runner.scenes import MIN_SEPARATION, StackLayout
from runner.stack_expert import StackStyle, plan_path

COMMON_SHIFT = 0.06
"""Largest shift (m, per axis) applied to both cubes of the base scene together."""
OWN_SHIFT = 0.03
"""Largest extra shift (m, per axis) of each cube on its own."""
YAW_SHIFT = 0.3
"""Largest change of each cube's yaw (rad)."""
OFFSET_STD = 0.005
"""Std of the per-demonstration constant offset of the executed targets (m, x and y)."""
JITTER_STD = 0.003
"""Std of the per-step jitter of the executed targets (m, each axis)."""


@dataclass(frozen=True)
class DemoPlan:
    """What one demonstration does: its layout, appearance draw and perturbation seed."""

    index: int
    layout: StackLayout
    draw_key: str
    draw: int


def _seed(*parts) -> np.random.Generator:
    material = [zlib.crc32(str(p).encode()) for p in parts]
    return np.random.default_rng(np.random.SeedSequence(material))


def perturbed_layout(base: StackLayout, rng: np.random.Generator) -> StackLayout:
    """The base scene with its cubes moved (common + own shift, yaw), cubes kept apart."""
    while True:
        common = rng.uniform(-COMMON_SHIFT, COMMON_SHIFT, size=2)
        own = rng.uniform(-OWN_SHIFT, OWN_SHIFT, size=(2, 2))
        yaw = rng.uniform(-YAW_SHIFT, YAW_SHIFT, size=2)
        a = (base.cube_a[0] + common[0] + own[0, 0], base.cube_a[1] + common[1] + own[0, 1],
             base.cube_a[2] + yaw[0])
        b = (base.cube_b[0] + common[0] + own[1, 0], base.cube_b[1] + common[1] + own[1, 1],
             base.cube_b[2] + yaw[1])
        if np.hypot(a[0] - b[0], a[1] - b[1]) >= MIN_SEPARATION:
            return StackLayout(tuple(float(v) for v in a), tuple(float(v) for v in b))


def plan_demos(experience_id: str, base: StackLayout, n: int, randomized: bool) -> list[DemoPlan]:
    """The first `n` demonstration plans of an experience (a pure function of its id)."""
    plans = []
    for i in range(n):
        rng = _seed("demo-layout", experience_id, i)
        layout = base if i == 0 else perturbed_layout(base, rng)
        draw = (i % 5) if randomized else 0
        plans.append(DemoPlan(i, layout, f"train:{experience_id}:{i}", draw))
    return plans


def record_demo(sim, camera, plan: DemoPlan, style: StackStyle, experience_id: str) -> tuple[Demo, bool]:
    """Execute one demonstration, rendering every step; returns (demo, success)."""
    camera.set_draw(sample_draw(plan.draw_key, plan.draw))
    path = plan_path(plan.layout, style)
    rng = _seed("demo-noise", experience_id, plan.index)
    offset = rng.normal(0.0, OFFSET_STD, size=2)
    jitter = rng.normal(0.0, JITTER_STD, size=(len(path), 3))
    sim.restore(plan.layout)
    images, eef, grip, actions, objects = [], [], [], [], []
    for t, row in enumerate(path):
        pos, rot = sim.ee_pos(), sim.ee_rot()
        goal_rot = yaw_down_rotation(float(row[3]))
        images.append(camera.render())
        eef.append(pos)
        grip.append(sim.data.qpos[7:9].copy())
        objects.append(np.concatenate(sim.cube_pos()))
        delta_pos = np.clip((row[:3] - pos) / DELTA_POS_SCALE, -1, 1)
        delta_rot = np.clip(_rotvec(goal_rot @ rot.T) / DELTA_ROT_SCALE, -1, 1)
        actions.append(np.concatenate([delta_pos, delta_rot, [row[4]]]))
        target = row[:3] + jitter[t]
        target[:2] += offset
        sim.step(target, goal_rot, float(row[4]))
    demo = Demo(images=np.stack(images), eef_pos=np.asarray(eef), gripper_qpos=np.asarray(grip),
                actions=np.asarray(actions), object_state=np.asarray(objects))
    return demo, sim.success()


def collect_demos(sim, camera, experience_id: str, base: StackLayout, style: StackStyle,
                  n_success: int, randomized: bool, max_tries: int | None = None):
    """Record demonstrations until `n_success` succeed; returns (demos, plans used, tries)."""
    plans = plan_demos(experience_id, base, max_tries or 3 * n_success, randomized)
    return keep_successes(plans, lambda plan: record_demo(sim, camera, plan, style, experience_id),
                          n_success)


def keep_successes(plans, record, n_success: int):
    """Record `plans` in order until `n_success` succeed; returns (demos, plans kept, tries)."""
    demos, kept, tries = [], [], 0
    for plan in plans:
        demo, ok = record(plan)
        tries += 1
        if ok:
            demos.append(demo)
            kept.append(plan)
            if len(demos) == n_success:
                break
    return demos, kept, tries
