"""Structural reference rules: object proximity and path clearance, as (K, Q) scores.

Both read the scene layout, never an image or an outcome. They are pure
functions of arrays; `stack_structural_inputs` turns the frozen Stack
library and query set into those arrays.

- `object_proximity`: minus the summed Euclidean distance between each
  object's position in the query and in the experience's base scene (the
  same score as the example container selector `examples/selectors/object-proximity`).
- `path_clearance`: the smallest distance from the experience's retargeted
  end-effector path to any obstacle in the query scene (an axis-aligned box).
  Larger clearance is preferred. In a scene without an obstacle every
  candidate gets the same score `NO_OBSTACLE_CLEARANCE`, so the rule is
  indifferent there and the audit's tie rule (lowest library index) decides.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from benchmark_data.library import read_experiences, replay_paths
from benchmark_data.query_sets import read_scenes
from leaderboard.errors import BadArgument, BrokenContract
from simulator.stack_scenes import CUBE_A_HALF, CUBE_B_HALF, TABLE_TOP_Z, StackLayout

NO_OBSTACLE_CLEARANCE = 1.0
"""Clearance (m) given to every candidate in a scene without an obstacle: a tie by design."""


def object_proximity(query_positions: np.ndarray, base_positions: np.ndarray) -> np.ndarray:
    """(K, Q) minus the summed per-object distance between query q and base scene i.

    Args:
        query_positions: (Q, M, 3) positions of M objects in each query scene.
        base_positions: (K, M, 3) positions of the same M objects (same order)
            in each experience's base scene.
    """
    query = np.asarray(query_positions, dtype=np.float64)
    base = np.asarray(base_positions, dtype=np.float64)
    if query.ndim != 3 or base.ndim != 3 or query.shape[1:] != base.shape[1:]:
        raise BadArgument(f"positions must be (Q, M, D) and (K, M, D) with the same M and D; "
                          f"got query {query.shape}, base {base.shape}")
    if not (np.isfinite(query).all() and np.isfinite(base).all()):
        raise BadArgument("positions contain NaN or infinite values")
    difference = base[:, None, :, :] - query[None, :, :, :]
    return -np.sqrt((difference ** 2).sum(axis=3)).sum(axis=2)


def box_distance(points: np.ndarray, center: np.ndarray, half_size: np.ndarray) -> np.ndarray:
    """(T,) Euclidean distance from each point (T, 3) to an axis-aligned box (0 inside)."""
    outside = np.maximum(np.abs(np.asarray(points, dtype=np.float64) - center) - half_size, 0.0)
    return np.sqrt((outside ** 2).sum(axis=1))


def _check_obstacles(obstacles: np.ndarray, n_scenes: int) -> np.ndarray:
    obstacles = np.asarray(obstacles, dtype=np.float64)
    if obstacles.shape != (n_scenes, 6):
        raise BadArgument(f"obstacles must have shape (Q, 6) = ({n_scenes}, 6) "
                          f"[cx, cy, cz, half_x, half_y, half_z]; got {obstacles.shape}")
    present = ~np.isnan(obstacles).all(axis=1)
    if np.isnan(obstacles[present]).any():
        raise BadArgument(f"obstacles row {int(np.flatnonzero(np.isnan(obstacles).any(axis=1) & present)[0])} "
                          "is partly NaN: a scene has a full obstacle row or an all-NaN row")
    if (obstacles[present, 3:] < 0).any():
        raise BadArgument("obstacles: half sizes must be non-negative")
    return obstacles


def path_clearance(paths: Sequence[Sequence[np.ndarray]], obstacles: np.ndarray) -> np.ndarray:
    """(K, Q) smallest distance from retargeted path [i][q] to scene q's obstacle.

    Args:
        paths: K sequences of Q arrays, each (T, 3) end-effector positions of
            experience i's path retargeted to scene q.
        obstacles: (Q, 6) [cx, cy, cz, half_x, half_y, half_z] per scene, an
            all-NaN row for a scene without an obstacle.

    Scenes without an obstacle score `NO_OBSTACLE_CLEARANCE` for every candidate.
    """
    n_experiences = len(paths)
    n_scenes = len(paths[0]) if n_experiences else 0
    obstacles = _check_obstacles(obstacles, n_scenes)
    scores = np.full((n_experiences, n_scenes), NO_OBSTACLE_CLEARANCE)
    for i, row in enumerate(paths):
        if len(row) != n_scenes:
            raise BadArgument(f"paths[{i}] has {len(row)} scenes, paths[0] has {n_scenes}")
        for q, path in enumerate(row):
            path = np.asarray(path, dtype=np.float64)
            if path.ndim != 2 or path.shape[1] != 3 or len(path) == 0:
                raise BadArgument(f"paths[{i}][{q}] must be (T, 3) with T >= 1, got {path.shape}")
            if not np.isnan(obstacles[q]).all():
                scores[i, q] = box_distance(path, obstacles[q, :3], obstacles[q, 3:]).min()
    return scores


# ---------------------------------------------------------------- frozen Stack data -> arrays

STACK_OBJECTS = ("cube_a", "cube_b")
"""Objects compared by `object_proximity` on Stack, in this order."""


def stack_object_positions(layouts: Sequence[dict]) -> np.ndarray:
    """(N, 2, 3) world positions of cube A and cube B from layout dicts (`StackLayout.to_dict`).

    z is the resting height of each cube's centre on the table, so it is the
    same in every layout and only x, y move the distance.
    """
    heights = {"cube_a": TABLE_TOP_Z + CUBE_A_HALF, "cube_b": TABLE_TOP_Z + CUBE_B_HALF}
    out = np.empty((len(layouts), len(STACK_OBJECTS), 3))
    for n, layout in enumerate(layouts):
        for m, name in enumerate(STACK_OBJECTS):
            if name not in layout:
                raise BadArgument(f"layout {n}: field '{name}' is missing")
            out[n, m] = (layout[name][0], layout[name][1], heights[name])
    return out


def stack_obstacles(layouts: Sequence[dict]) -> np.ndarray:
    """(N, 6) obstacle boxes [cx, cy, cz, hx, hy, hz] (all-NaN rows where there is none).

    A layout's obstacle is (x, y, half_x, half_y, half_z), standing on the table.
    """
    out = np.full((len(layouts), 6), np.nan)
    for n, layout in enumerate(layouts):
        obstacle = layout.get("obstacle")
        if obstacle is not None:
            x, y, hx, hy, hz = obstacle
            out[n] = (x, y, TABLE_TOP_Z + hz, hx, hy, hz)
    return out


def stack_retargeted_paths(sources: Sequence[tuple], query_layouts: Sequence) -> list[list[np.ndarray]]:
    """Each experience's recorded path retargeted to each query layout, (T, 3) positions.

    Args:
        sources: K pairs (base `StackLayout`, recorded path (T, 6)), library order
            (the library's `replay_paths`, base layouts as `StackLayout`s).
        query_layouts: Q `StackLayout`s.

    Uses the Replay executor's own `simulator.replay.retarget`, so the path is
    the one Replay commands (before execution noise).
    """
    from simulator.replay import retarget  # deferred: loads numba (the sim extra); the web service does not

    return [[retarget(path, base, query)[:, :3] for query in query_layouts]
            for base, path in sources]


def structural_rule_scores(setting, data, root=None) -> dict[str, np.ndarray | str]:
    """object_proximity and path_clearance (K, Q) of a frozen setting, or why not computed.

    Path clearance is computed once per physical state (appearance draws
    share the layout) and copied to every scene of the state.
    """
    if setting.task != "stack":
        reason = f"needs the {setting.task} task's layouts, which are not built in this release"
        return {"object_proximity": reason, "path_clearance": reason}
    scenes = read_scenes(setting.query_set, root)
    if tuple(scenes["scene_id"]) != tuple(data.scenes.scene_ids):
        raise BrokenContract(f"setting {setting.id}: scene order of {setting.query_set}/scenes.parquet "
                          "differs from the transfer data's")
    library = read_experiences(setting.library_id, root).set_index("experience_id")
    base = [json.loads(library.loc[e, "base_layout"]) for e in data.experience_ids]
    query = [json.loads(text) for text in scenes["layout"]]
    proximity = object_proximity(stack_object_positions(query), stack_object_positions(base))
    first = {}
    for q, state in enumerate(scenes["state_id"]):
        first.setdefault(state, q)
    state_layouts = [query[q] for q in first.values()]
    sources = replay_paths(setting.library_id, root)
    paths = stack_retargeted_paths([(StackLayout.from_dict(sources[e][0]), sources[e][1])
                                    for e in data.experience_ids],
                                   [StackLayout.from_dict(lay) for lay in state_layouts])
    per_state = path_clearance(paths, stack_obstacles(state_layouts))
    column = {state: n for n, state in enumerate(first)}
    clearance = per_state[:, [column[state] for state in scenes["state_id"]]]
    return {"object_proximity": proximity, "path_clearance": clearance}
