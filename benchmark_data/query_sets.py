"""Query sets on disk: `query_sets/<id>/scenes.parquet` (and `images.tar` of agent-view PNGs).

One row per scene (state x appearance draw) with the AUDIT_SPEC metadata,
the layout, the object positions and the simulator state hash shared by all
draws of a state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from benchmark_data.paths import query_set_dir

N_DRAWS = 5
"""Appearance draws per state (draw 0 is the nominal appearance)."""


def scene_id(state_id: str, draw: int) -> str:
    return f"{state_id}-d{draw}"


def _scene_rows(query_set: str, task: str, states, sim, task_columns) -> list[dict]:
    """One row per (state, draw): the AUDIT_SPEC metadata, the task's own columns, the obstacle
    and the state hash. `task_columns(layout, sim)` reads the restored state."""
    rows = []
    for state in states:
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
    from runner.scenes import query_states

    return _scene_rows(query_set, "stack", query_states(query_set), sim, _stack_columns)


def door_scene_rows(query_set: str, sim) -> list[dict]:
    """Metadata rows of a Door query set; `sim` (a DoorSim) computes each state's hash."""
    from runner.door_scenes import door_query_states

    return _scene_rows(query_set, "door", door_query_states(query_set), sim, _door_columns)


def write_scenes(query_set: str, rows: list[dict], root=None) -> Path:
    out = query_set_dir(query_set, root)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scenes.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False, compression="zstd")
    return path


class QuerySetNotFoundError(FileNotFoundError):
    """The frozen files of a query set are missing."""


def read_scenes(query_set: str, root=None) -> pd.DataFrame:
    path = query_set_dir(query_set, root) / "scenes.parquet"
    if not path.exists():
        raise QuerySetNotFoundError(f"query set {query_set!r}: {path} does not exist "
                                    f"(build it with `expaudit data generate`)")
    return pd.read_parquet(path)
