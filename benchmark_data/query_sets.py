"""Query sets on disk: `query_sets/<id>/scenes.parquet` (and `images.tar` of agent-view PNGs).

One row per scene (state x appearance draw) with the AUDIT_SPEC metadata,
the layout, the object positions and the simulator state hash shared by all
draws of a state. The generation layer samples the states and computes the rows;
this module names, writes and reads them, and names the validation query sets.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark_data.paths import query_set_dir
from expaudit.errors import DataNotFound

N_DRAWS = 5
"""Appearance draws per state (draw 0 is the nominal appearance)."""


VERSION_COLUMN = "query_set_version"
"""Column of `scenes.parquet` naming the version of the query states (a file without it
holds version 1: written before states had versions)."""


def scenes_version(scenes: pd.DataFrame) -> int:
    """The query-set version of a scenes table (`VERSION_COLUMN`; 1 where absent)."""
    if VERSION_COLUMN not in scenes.columns:
        return 1
    return int(scenes[VERSION_COLUMN].iloc[0])


def scene_id(state_id: str, draw: int) -> str:
    return f"{state_id}-d{draw}"


def write_scenes(query_set: str, rows: list[dict], root=None) -> Path:
    out = query_set_dir(query_set, root)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scenes.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False, compression="zstd")
    return path


class QuerySetNotFoundError(DataNotFound, FileNotFoundError):
    """The frozen files of a query set are missing."""


def read_scenes(query_set: str, root=None) -> pd.DataFrame:
    path = query_set_dir(query_set, root) / "scenes.parquet"
    if not path.exists():
        raise QuerySetNotFoundError(f"query set {query_set!r}: {path} does not exist "
                                    f"(build it with `expaudit data generate`)")
    return pd.read_parquet(path)


# ---- validation query sets ------------------------------------------------------------------
VALIDATION_SEEDS = {"stack-val": 6006, "door-val": 7007}
"""Generator seeds of the validation query sets, one per task (docs/policy_protocol.md).

Every choice of a policy recipe is made on these sets, never on the frozen query
sets; their seeds are used by no frozen query set. Same generator, layout levels
(10 states per level) and appearance draws (keyed by state id) as the frozen sets;
they are pure functions of their names and are not published as query sets."""
VALIDATION_TASK = {"stack-val": "stack", "door-val": "door"}
