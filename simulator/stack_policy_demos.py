"""Stack demonstrations for one experience's policy: the expert, in that experience's style, around its base scene.

Each demonstration moves the base scene's cubes (one common shift up to
`COMMON_SHIFT` plus an independent one up to `OWN_SHIFT` per cube, yaw up to
`YAW_SHIFT`) and records the expert's path in the experience's style
(`simulator.demo_recording`: perturbed execution, actions labelled towards the
plan, successes kept). The encoder's pretraining target is both cubes'
positions.

Appearance: Policy demonstrations are rendered with the nominal appearance;
Policy+DR demonstrations each with a randomized draw (lighting, colours,
textures, camera) from the same machinery as the query draws, seeded from a
separate namespace (`train:<experience>:<n>`), never from a query state id.
"""

from __future__ import annotations

import numpy as np

from simulator import demo_recording
from simulator.demo_recording import DemoPlan, DemoTask, Target
from simulator.osc import yaw_down_rotation
from simulator.policy_model import Demo
from simulator.stack_scenes import MIN_SEPARATION, StackLayout
from simulator.stack_expert import StackStyle, plan_path

COMMON_SHIFT = 0.06
"""Largest shift (m, per axis) applied to both cubes of the base scene together."""
OWN_SHIFT = 0.03
"""Largest extra shift (m, per axis) of each cube on its own."""
YAW_SHIFT = 0.3
"""Largest change of each cube's yaw (rad)."""


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


def _expert_targets(sim, layout: StackLayout, style: StackStyle) -> list[Target]:
    return [(row[:3], yaw_down_rotation(float(row[3])), float(row[4])) for row in plan_path(layout, style)]


STACK_DEMOS = DemoTask(perturb=perturbed_layout, expert_targets=_expert_targets,
                       object_state=lambda sim: np.concatenate(sim.cube_pos()))
"""The Stack task's part of the demonstration recorder."""


def plan_demos(experience_id: str, base: StackLayout, n: int, randomized: bool) -> list[DemoPlan]:
    """The first `n` demonstration plans of an experience (a pure function of its id)."""
    return demo_recording.plan_demos(STACK_DEMOS, experience_id, base, n, randomized)


def record_demo(sim, camera, plan: DemoPlan, style: StackStyle, experience_id: str) -> tuple[Demo, bool]:
    """Execute one demonstration, rendering every step; returns (demo, success)."""
    return demo_recording.record_demo(STACK_DEMOS, sim, camera, plan, style, experience_id)


def collect_demos(sim, camera, experience_id: str, base: StackLayout, style: StackStyle,
                  n_success: int, randomized: bool, max_tries: int | None = None):
    """Record demonstrations until `n_success` succeed; returns (demos, plans used, tries)."""
    return demo_recording.collect_demos(STACK_DEMOS, sim, camera, experience_id, base, style,
                                        n_success, randomized, max_tries)
