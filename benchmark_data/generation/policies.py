"""The frozen policies' experiences and closed-loop checks, shared by their training and tests.

`experience_scene` is where and how an experience's demonstrations are
recorded, `demos_sha256` the hash of training arrays that each policy's
training.json keeps, and `evaluate_policy` a frozen policy's closed-loop
success on its own demonstration layouts or a query set. The policies are
trained by `recipe_policies` (policy mechanism 2); the version-1 trainer
(one agent-view camera) was retired with its mechanism.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from benchmark_data.library import read_experiences
from benchmark_data.policy_files import policy_dir, read_training
from benchmark_data.query_sets import N_DRAWS
from benchmark_data.registry import LIBRARY_IDS
from expaudit.errors import InvalidInput, UnknownName
from simulator import policy_rollout
from simulator.appearance import sample_draw
from simulator.door_expert import DoorStyle
from simulator.door_scenes import QUERY_SET_SEEDS as DOOR_QUERY_SETS
from simulator.door_scenes import DoorLayout, door_query_states
from simulator.door_sim import DoorSim
from simulator.policy_executor import load_actor, make_camera
from simulator.policy_rollout import noise_for, run_episode
from simulator.stack_scenes import QUERY_SET_SEEDS as STACK_QUERY_SETS
from simulator.stack_scenes import StackLayout
from simulator.stack_scenes import query_states as stack_query_states
from simulator.stack_expert import StackStyle
from simulator.stack_sim import StackSim


class UnknownExperience(UnknownName, KeyError):
    """An experience id that is not in the task's library."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BadDraw(InvalidInput, ValueError):
    """An appearance draw outside 0 to N_DRAWS - 1."""


class UnknownPolicyQuerySet(UnknownName, KeyError):
    """A query set a policy is evaluated on that its task does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def experience_scene(task: str, experience_id: str, root=None):
    """(base layout, style) of an experience, from its library: where and how its demonstrations
    are recorded."""
    frame = read_experiences(LIBRARY_IDS[task], root).set_index("experience_id")
    if experience_id not in frame.index:
        raise UnknownExperience(f"experience_id {experience_id!r} is not in library {LIBRARY_IDS[task]!r}")
    row = frame.loc[experience_id]
    if task == "stack":
        return StackLayout.from_dict(json.loads(row.base_layout)), StackStyle.from_dict(json.loads(row.style))
    return DoorLayout.from_dict(json.loads(row.base_layout)), DoorStyle(**json.loads(row.style))


def demos_sha256(demos, *, images: bool = True) -> str:
    """SHA-256 over every training array, in order (images, low-dim observations, actions).

    With `images=False` the renders are left out: the scripted demonstrations do
    not read the camera, so that hash is the same on every machine with the
    pinned BLAS kernel, while the renders follow the machine's software
    renderer (docs/data.md, "What reproduces where").
    """
    h = hashlib.sha256()
    for demo in demos:
        arrays = (demo.images,) if images else ()
        for array in arrays + (demo.eef_pos, demo.gripper_qpos, demo.actions):
            h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def evaluate_policy(mechanism: str, experience_id: str, on: str = "train", *, draw: int = 0, seed: int = 0,
                    limit: int | None = None, root=None) -> dict[str, tuple[int, int]]:
    """Closed-loop success of one frozen policy, for checking a policy, not for the published cells.

    `on="train"`: its own demonstration layouts, each under the appearance it was
    recorded with; otherwise a query set's physical states under appearance draw
    `draw`. Episodes are the executor's (`simulator.policy_rollout`, horizon and
    noise of `seed`). Returns {group: (successes, episodes)}, grouped by layout
    level for a query set and as "train" for the demonstrations.
    """
    if not 0 <= draw < N_DRAWS:
        raise BadDraw(f"draw must be 0-{N_DRAWS - 1}, got {draw}")
    record = read_training(mechanism, experience_id, root)
    task = record["task"]
    if task == "stack":
        Layout, query_states, Sim, known = StackLayout, stack_query_states, StackSim, STACK_QUERY_SETS
    else:
        Layout, query_states, Sim, known = DoorLayout, door_query_states, DoorSim, DOOR_QUERY_SETS
    if on != "train" and on not in known:
        raise UnknownPolicyQuerySet(f"--on: {task} has no query set {on!r}; give 'train' or one of "
                                    f"{', '.join(known)}")
    if on == "train":
        items = [(d["draw_key"], Layout.from_dict(d["layout"]), sample_draw(d["draw_key"], d["draw"]), "train")
                 for d in record.get("demos", [])]
    else:
        items = [(f"{q.state_id}-d{draw}", q.layout, sample_draw(q.state_id, draw),
                  f"level {q.layout_level}") for q in query_states(on)]
    items = items[:limit] if limit is not None else items
    actor, size = load_actor(str(policy_dir(mechanism, experience_id, root)))
    sim = Sim()
    camera = make_camera(sim, task, size)
    horizon = policy_rollout.HORIZON[task]  # read per call (tests shorten it)
    counts: dict[str, tuple[int, int]] = {}
    try:
        for scene_id, layout, appearance, group in items:
            result = run_episode(sim, camera, actor, lambda s, L=layout: s.restore(L), appearance,
                                 noise_for(seed, experience_id, scene_id, horizon), horizon)
            done, n = counts.get(group, (0, 0))
            counts[group] = (done + int(result.success), n + 1)
    finally:
        camera.close()
    return counts
