"""A tiny frozen root for the service tests, cut from the real frozen benchmark data.

The real files are only read: a few experiences, a few physical states of
one query set (all their renders and images), and the stored cells of
exactly those, are written into a temporary root with the same layout, so
the real loaders (`benchmark_data.frozen`), the selector /input builder and
the Replay runner work on it unchanged.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pandas as pd

from benchmark_data.cells import load_cells
from benchmark_data.paths import FROZEN_ROOT, cells_table, library_dir, query_set_dir
from benchmark_data.registry import LIBRARY_IDS


def _copy_tar(source: Path, target: Path, names: set[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    found = set()
    with tarfile.open(source) as src, tarfile.open(target, "w") as dst:
        for member in src:
            if member.name in names:
                data = src.extractfile(member).read()
                info = tarfile.TarInfo(member.name)
                info.size = len(data)
                dst.addfile(info, io.BytesIO(data))
                found.add(member.name)
    missing = names - found
    if missing:
        raise FileNotFoundError(f"{source} lacks {sorted(missing)[:3]}")


def copy_library(root: Path, experience_ids: list[str], task: str = "stack") -> None:
    """The task's library's rows and base images of `experience_ids`."""
    library_id = LIBRARY_IDS[task]
    frame = pd.read_parquet(library_dir(library_id) / "experiences.parquet")
    frame = frame[frame["experience_id"].isin(experience_ids)]
    if len(frame) != len(experience_ids):
        raise FileNotFoundError(f"the frozen library lacks some of {experience_ids}")
    out = library_dir(library_id, root)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out / "experiences.parquet", index=False)
    _copy_tar(library_dir(library_id) / "base_images.tar", out / "base_images.tar",
              {f"{e}.png" for e in experience_ids})


def copy_query_set(root: Path, query_set: str, state_ids: list[str]) -> pd.DataFrame:
    """Every render of `state_ids` (rows and images); returns the scene rows."""
    scenes = pd.read_parquet(query_set_dir(query_set) / "scenes.parquet")
    scenes = scenes[scenes["state_id"].isin(state_ids)].reset_index(drop=True)
    out = query_set_dir(query_set, root)
    out.mkdir(parents=True, exist_ok=True)
    scenes.to_parquet(out / "scenes.parquet", index=False)
    _copy_tar(query_set_dir(query_set) / "images.tar", out / "images.tar",
              {f"{s}.png" for s in scenes["scene_id"]})
    return scenes


def copy_cells(root: Path, query_set: str, experience_ids: list[str], state_ids: list[str],
               mechanism: str = "replay") -> int:
    """The stored cells of one mechanism (Replay's are per state, the policies' per scene) of
    those experiences and states; returns how many."""
    cells = load_cells(mechanism, query_set)
    if mechanism != "replay":  # a policy's cell names its scene: keep the states' renders
        states = cells["state_id"].str.rsplit("-d", n=1).str[0]
    else:
        states = cells["state_id"]
    cells = cells[cells["experience_id"].isin(experience_ids) & states.isin(state_ids)]
    path = cells_table(mechanism, query_set, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    cells.to_parquet(path, index=False)
    return len(cells)


def experience_ids(n: int, task: str = "stack") -> list[str]:
    return [f"{task}-e{i:03d}" for i in range(n)]


def real_data_available() -> bool:
    return (library_dir(LIBRARY_IDS["stack"]) / "base_images.tar").is_file() and \
        (FROZEN_ROOT / "query_sets" / "stack-orig" / "images.tar").is_file()
