"""Building query sets: the rows of a frozen query set's scenes, and the validation query sets.

The rows of `scenes.parquet` come from restoring each sampled state in the simulator
(its state hash) for each appearance draw; the validation query sets (`VALIDATION_SEEDS`)
are sampled with the frozen sets' generator and checked disjoint from every frozen state,
seed and training scene. The frozen-data readers of query sets write and read the rows.
"""

from __future__ import annotations

import json
import math

import numpy as np

from benchmark_data.query_sets import N_DRAWS, VALIDATION_SEEDS, VALIDATION_TASK, VERSION_COLUMN, scene_id
from benchmark_data.registry import UnknownTask
from expaudit.errors import InternalError, InvalidInput, UnknownName
from simulator.appearance import sample_draw
from simulator.door_scenes import QUERY_SET_SEEDS as DOOR_QUERY_SET_SEEDS
from simulator.door_scenes import (
    QUERY_SET_VERSION,
    QUERY_SET_VERSIONS,
    DoorQueryState,
    door_query_states,
    sample_door_layout,
    versioned_states,
)
from simulator.door_sim import check_valid_state
from simulator.stack_scenes import QUERY_SET_SEEDS as STACK_QUERY_SET_SEEDS
from simulator.stack_scenes import QueryState, query_states, sample_layout


def _scene_rows(query_set: str, task: str, states, sim, task_columns, check=None,
                extra=None) -> list[dict]:
    """One row per (state, draw): the AUDIT_SPEC metadata, the task's own columns, the obstacle
    and the state hash. `task_columns(layout, sim)` reads the restored state; `check(sim,
    layout, state_id)`, when given, raises on a state that is not physically valid, so no row
    of it is written; `extra` columns go into every row."""
    rows = []
    for state in states:
        if check is not None:
            check(sim, state.layout, state.state_id)
        sim.restore(state.layout)
        digest = sim.state_hash()
        lay = state.layout
        own = task_columns(lay, sim)
        obstacle = lay.obstacle
        for draw in range(N_DRAWS):
            rows.append({
                "scene_id": scene_id(state.state_id, draw), "state_id": state.state_id,
                "layout_level": state.layout_level, "appearance_draw": draw,
                "query_set": query_set, "task": task, "layout": json.dumps(lay.to_dict()),
                **own,
                "has_obstacle": obstacle is not None,
                "obstacle_x": obstacle[0] if obstacle else float("nan"),
                "obstacle_y": obstacle[1] if obstacle else float("nan"),
                "obstacle_top": 0.8 + 2 * obstacle[4] if obstacle else float("nan"),
                "state_hash": digest,
                **(extra or {}),
            })
    return rows


def _stack_columns(lay, sim) -> dict:
    return {"cube_a_x": lay.cube_a[0], "cube_a_y": lay.cube_a[1], "cube_a_yaw": lay.cube_a[2],
            "cube_b_x": lay.cube_b[0], "cube_b_y": lay.cube_b[1], "cube_b_yaw": lay.cube_b[2]}


def _door_columns(lay, sim) -> dict:
    handle = sim.geometry()["handle"]
    return {"door_x": lay.door[0], "door_y": lay.door[1], "door_yaw": lay.door[2],
            "hinge": lay.hinge, "latch": lay.latch,
            "handle_x": float(handle[0]), "handle_y": float(handle[1]), "handle_z": float(handle[2])}


def stack_scene_rows(query_set: str, sim) -> list[dict]:
    """Metadata rows of a Stack query set; `sim` computes each state's hash."""
    return _scene_rows(query_set, "stack", query_states(query_set), sim, _stack_columns)


def door_scene_rows(query_set: str, sim, version: int = QUERY_SET_VERSION) -> list[dict]:
    """Metadata rows of a Door query set as of `version`; `sim` (a DoorSim) checks every state
    (`check_valid_state`: a state that is not physically valid raises `InvalidState`, and no
    row is returned) and computes its hash. Rows carry the version (`query_set_version`)."""
    return _scene_rows(query_set, "door", door_query_states(query_set, version), sim, _door_columns,
                       check=check_valid_state, extra={VERSION_COLUMN: version})



# ---- validation query sets ------------------------------------------------------------------
class ValidationOverlapError(InvalidInput, ValueError):
    """A validation query state coincides with a frozen query state, a seed or a training scene."""


class UnknownValidationSet(UnknownName, KeyError):
    """A validation query set name that `VALIDATION_SEEDS` does not declare."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class NoTrainingLayouts(InternalError, ValueError):
    """A distance to the nearest training layout asked of an empty list of layouts (a policy
    always has some: a bug)."""


def _task_layouts(task: str):
    """(seeds of the frozen query sets, their states' function, the layout sampler) of a task."""
    if task == "stack":
        return STACK_QUERY_SET_SEEDS, query_states, sample_layout, QueryState
    if task == "door":
        return DOOR_QUERY_SET_SEEDS, door_query_states, sample_door_layout, DoorQueryState
    raise UnknownTask(f"task must be 'stack' or 'door', got {task!r}")


VALIDATION_VERSION = {"stack-val": 1, "door-val": 1}
"""Version of each validation set the recipe's gates use (door-val: the version its recorded
gates were measured on; its version 2 makes the ajar states valid like the Door query sets')."""


def validation_states(name: str, version: int | None = None) -> tuple:
    """The 40 states (10 per level, level-major) of a validation query set, like a frozen set's;
    a Door set as of `version` (default `VALIDATION_VERSION`; `door_scenes.versioned_states`)."""
    if name not in VALIDATION_SEEDS:
        raise UnknownValidationSet(f"unknown validation query set {name!r}; "
                                   f"known: {', '.join(VALIDATION_SEEDS)}")
    task = VALIDATION_TASK[name]
    _, _, sample, state_cls = _task_layouts(task)
    rng = np.random.default_rng(VALIDATION_SEEDS[name])
    per_level = 10
    drawn = tuple(state_cls(f"{name}-s{level * per_level + j:02d}", level, sample(level, rng))
                  for level in range(4) for j in range(per_level))
    if task != "door":
        return drawn
    return versioned_states(drawn, VALIDATION_VERSION[name] if version is None else version)


def _versions(task: str) -> tuple[int, ...]:
    """Every version of the task's query and validation states (all are kept from training)."""
    return QUERY_SET_VERSIONS if task == "door" else (1,)


def layout_distance(task: str, a, b) -> float:
    """How far apart two layouts put the task's objects (m), ignoring yaw, articulation and obstacle.

    Stack: the larger of the two cubes' xy displacements; Door: the door base's xy displacement.
    """
    if task == "stack":
        return max(math.hypot(a.cube_a[0] - b.cube_a[0], a.cube_a[1] - b.cube_a[1]),
                   math.hypot(a.cube_b[0] - b.cube_b[0], a.cube_b[1] - b.cube_b[1]))
    if task == "door":
        return math.hypot(a.door[0] - b.door[0], a.door[1] - b.door[1])
    raise UnknownTask(f"task must be 'stack' or 'door', got {task!r}")


def nearest_training_distances(name: str, training_layouts: list) -> list[dict]:
    """Per validation state: its level and the distance (m) to its nearest training layout.

    `training_layouts` is one policy's demonstration layouts; the distance is
    `layout_distance`, so a query state far from every demonstration is one the
    policy must generalise to.
    """
    if not training_layouts:
        raise NoTrainingLayouts("training_layouts is empty")
    task = VALIDATION_TASK[name]
    out = []
    for state in validation_states(name):
        dists = [layout_distance(task, state.layout, t) for t in training_layouts]
        best = min(range(len(dists)), key=dists.__getitem__)
        out.append({"state_id": state.state_id, "layout_level": state.layout_level,
                    "nearest_m": round(dists[best], 5), "nearest_index": best})
    return out


def check_validation_disjoint(name: str, training_layouts=(), training_draw_keys=()) -> None:
    """Raise `ValidationOverlapError` unless the validation set shares nothing with what it must not.

    Checked: its seed is no frozen query set's seed; no validation state id or
    layout equals a state of a frozen query set of its task; no training layout
    equals a validation layout; no perturbed appearance draw (1-4) of a training
    key (e.g. `train:<experience>:<n>`) equals one of a validation state.
    """
    if name not in VALIDATION_SEEDS:
        raise UnknownValidationSet(f"unknown validation query set {name!r}; "
                                   f"known: {', '.join(VALIDATION_SEEDS)}")
    task = VALIDATION_TASK[name]
    frozen_seeds, frozen_states, _, _ = _task_layouts(task)
    seed = VALIDATION_SEEDS[name]
    every_seed = {**_task_layouts("stack")[0], **_task_layouts("door")[0]}
    clash = [q for q, s in every_seed.items() if s == seed]
    if clash:
        raise ValidationOverlapError(f"validation set {name!r}: seed {seed} is the seed of frozen query set {clash[0]!r}")
    states = validation_states(name)
    keys = {s.layout.key(): s.state_id for s in states}
    ids = {s.state_id for s in states}
    for query_set, version in ((q, v) for q in frozen_seeds for v in _versions(task)):
        for frozen in frozen_states(query_set, version) if task == "door" else frozen_states(query_set):
            if frozen.state_id in ids:
                raise ValidationOverlapError(f"validation set {name!r}: state id {frozen.state_id!r} is frozen")
            if frozen.layout.key() in keys:
                raise ValidationOverlapError(f"validation set {name!r}: state {keys[frozen.layout.key()]!r} "
                                             f"has the layout of frozen state {frozen.state_id!r}")
    for i, layout in enumerate(training_layouts):
        if layout.key() in keys:
            raise ValidationOverlapError(f"validation set {name!r}: training layout {i} equals the layout "
                                         f"of state {keys[layout.key()]!r}")
    draws = {sample_draw(s.state_id, d): s.state_id for s in states for d in range(1, N_DRAWS)}
    for key in training_draw_keys:
        for d in range(1, N_DRAWS):
            if sample_draw(key, d) in draws:
                raise ValidationOverlapError(f"validation set {name!r}: training draw {key!r}/{d} equals "
                                             f"a draw of state {draws[sample_draw(key, d)]!r}")


def check_not_a_query_state(task: str, training_layouts) -> None:
    """Raise `ValidationOverlapError` if a training layout equals a state of any frozen or validation
    query set of `task` (training demonstrations must be drawn from their own seeds)."""
    seeds, states_of, _, _ = _task_layouts(task)
    versions = _versions(task)
    keys = {s.layout.key(): s.state_id for q in seeds for v in versions
            for s in (states_of(q, v) if task == "door" else states_of(q))}
    keys.update({s.layout.key(): s.state_id for name, t in VALIDATION_TASK.items() if t == task
                 for v in versions for s in validation_states(name, v)})
    for i, layout in enumerate(training_layouts):
        if layout.key() in keys:
            raise ValidationOverlapError(f"training layout {i} equals the layout of query state {keys[layout.key()]!r}")
