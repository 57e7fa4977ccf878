"""Demonstrations spanning the query layout range, for recipe trials (docs/policy_protocol.md, lever 2).

Plan `n` of an experience draws its layout from layout level `LEVELS[n % 3]`
with the query sets' own generator (`simulator.stack_scenes.sample_layout`,
`simulator.door_scenes.sample_door_layout`) and a generator seeded from its own
namespace (`recipe-demo-layout`, experience, n), never from a query set's
seed. The expert executes it in the experience's own style with the shared
recorder (`simulator.demo_recording`: perturbed execution, plan-labelled
actions, successes kept). Appearance as the published policies': draw 0 for
Policy, draws cycling 0-4 of `train:<experience>:<n>` for Policy+DR.
"""

from __future__ import annotations

from simulator.demo_recording import N_APPEARANCE_DRAWS, DemoPlan, seeded
from simulator.door_policy_demos import DOOR_DEMOS
from simulator.door_scenes import sample_door_layout
from simulator.errors import UnknownTask
from simulator.stack_policy_demos import STACK_DEMOS
from simulator.stack_scenes import sample_layout

LEVELS = (0, 1, 2)
"""Layout levels the demonstrations cycle through (no obstacles: the expert records without them)."""


def recipe_plans(task: str, experience_id: str, n: int, randomized: bool) -> list[DemoPlan]:
    """The first `n` demonstration plans of an experience (a pure function of its arguments)."""
    if task == "stack":
        sample = sample_layout
    elif task == "door":
        sample = sample_door_layout
    else:
        raise UnknownTask(f"task must be 'stack' or 'door', got {task!r}")
    plans = []
    for i in range(n):
        layout = sample(LEVELS[i % len(LEVELS)], seeded("recipe-demo-layout", experience_id, i))
        draw = (i % N_APPEARANCE_DRAWS) if randomized else 0
        plans.append(DemoPlan(i, layout, f"train:{experience_id}:{i}", draw))
    return plans


def demo_task(task: str):
    """The task's part of the shared recorder (`simulator.demo_recording.DemoTask`)."""
    return STACK_DEMOS if task == "stack" else DOOR_DEMOS
