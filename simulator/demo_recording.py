"""Recording the demonstrations a policy is cloned from, for any task: plans, the step loop, keeping successes.

A task supplies three things (`DemoTask`): how a demonstration moves the
experience's base scene, the expert's path in a restored scene (one
end-effector target per control step: position, orientation, gripper), and
the object state the image encoder is pretrained to read off a frame. The
rest is shared, so the Stack and Door policies are cloned from data made the
same way: the path is executed under perturbations (a constant xy offset per
demonstration and a per-step jitter) while every action is labelled towards
the unperturbed plan, so the policy sees states off the plan and learns to
return to it; only successful demonstrations are kept (robomimic's
convention).

Seeding: a plan is a pure function of (experience id, index). Policy+DR
demonstrations cycle appearance draws 0-4 of their own namespace
(`train:<experience>:<n>`), never a query state id.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.appearance import sample_draw
from simulator.policy_model import Demo
from simulator.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE, _rotvec

OFFSET_STD = 0.005
"""Std of the per-demonstration constant offset of the executed targets (m, x and y)."""
JITTER_STD = 0.003
"""Std of the per-step jitter of the executed targets (m, each axis)."""
N_APPEARANCE_DRAWS = 5
"""Policy+DR demonstrations cycle through this many appearance draws (0 is nominal)."""

Target = tuple[np.ndarray, np.ndarray, float]
"""One control step of an expert path: position (3,), orientation (3, 3), gripper command."""


@dataclass(frozen=True)
class DemoPlan:
    """What one demonstration does: its layout, appearance draw and perturbation seed."""

    index: int
    layout: Any
    draw_key: str
    draw: int


@dataclass(frozen=True)
class DemoTask:
    """What the shared recorder needs of a task.

    `perturb(base, rng)`: a layout near the experience's base scene;
    `expert_targets(sim, layout, style)`: the expert's path, called after the
    layout is restored (a path may read the restored scene);
    `object_state(sim)`: the pretraining target of the current frame.
    """

    perturb: Callable[[Any, np.random.Generator], Any]
    expert_targets: Callable[[Any, Any, Any], list[Target]]
    object_state: Callable[[Any], np.ndarray]


def seeded(*parts) -> np.random.Generator:
    """A generator that is a pure function of `parts` (their text)."""
    material = [zlib.crc32(str(p).encode()) for p in parts]
    return np.random.default_rng(np.random.SeedSequence(material))


def plan_demos(task: DemoTask, experience_id: str, base, n: int, randomized: bool) -> list[DemoPlan]:
    """The first `n` demonstration plans of an experience: plan 0 is its base scene itself."""
    plans = []
    for i in range(n):
        rng = seeded("demo-layout", experience_id, i)
        layout = base if i == 0 else task.perturb(base, rng)
        draw = (i % N_APPEARANCE_DRAWS) if randomized else 0
        plans.append(DemoPlan(i, layout, f"train:{experience_id}:{i}", draw))
    return plans


def record_demo(task: DemoTask, sim, camera, plan: DemoPlan, style, experience_id: str) -> tuple[Demo, bool]:
    """Execute one demonstration, rendering every step before acting; returns (demo, success)."""
    camera.set_draw(sample_draw(plan.draw_key, plan.draw))
    sim.restore(plan.layout)
    targets = task.expert_targets(sim, plan.layout, style)
    rng = seeded("demo-noise", experience_id, plan.index)
    offset = rng.normal(0.0, OFFSET_STD, size=2)
    jitter = rng.normal(0.0, JITTER_STD, size=(len(targets), 3))
    images, eef, grip, actions, objects = [], [], [], [], []
    for t, (goal_pos, goal_rot, gripper) in enumerate(targets):
        pos, rot = sim.ee_pos(), sim.ee_rot()
        images.append(camera.render())
        eef.append(pos)
        grip.append(sim.data.qpos[7:9].copy())
        objects.append(task.object_state(sim))
        delta_pos = np.clip((goal_pos - pos) / DELTA_POS_SCALE, -1, 1)
        delta_rot = np.clip(_rotvec(goal_rot @ rot.T) / DELTA_ROT_SCALE, -1, 1)
        actions.append(np.concatenate([delta_pos, delta_rot, [gripper]]))
        executed = goal_pos + jitter[t]
        executed[:2] += offset
        sim.step(executed, goal_rot.copy(), float(gripper))
    demo = Demo(images=np.stack(images), eef_pos=np.asarray(eef), gripper_qpos=np.asarray(grip),
                actions=np.asarray(actions), object_state=np.asarray(objects))
    return demo, sim.success()


def collect_demos(task: DemoTask, sim, camera, experience_id: str, base, style, n_success: int,
                  randomized: bool, max_tries: int | None = None):
    """Record demonstrations until `n_success` succeed; returns (demos, plans kept, tries)."""
    plans = plan_demos(task, experience_id, base, max_tries or 3 * n_success, randomized)
    return keep_successes(plans, lambda plan: record_demo(task, sim, camera, plan, style, experience_id),
                          n_success)


def keep_successes(plans: Iterable[DemoPlan], record, n_success: int):
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
