"""Reading a task's recording stream and its experiences (the generation layer records them).

Files in `libraries/<library_id>/`:
- `stream.parquet`: every draw (stream_index, accepted, experience_id or empty);
  the rejection rate is computed from it.
- `experiences.parquet`: accepted recordings in order, with base layout,
  expert style and the recorded target path (the Replay source).
- `demos.hdf5`: robomimic-style trajectories, `data/demo_N/{actions,states,obs/...}`.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from benchmark_data.paths import library_dir
from expaudit.errors import DataNotFound


class LibraryNotFoundError(DataNotFound, FileNotFoundError):
    """The frozen files of a library are missing."""


def read_experiences(library_id: str, root=None) -> pd.DataFrame:
    """experiences.parquet of a library (raises `LibraryNotFoundError` naming the file)."""
    path = library_dir(library_id, root) / "experiences.parquet"
    if not path.exists():
        raise LibraryNotFoundError(f"library {library_id!r}: {path} does not exist "
                                   f"(build it with `expaudit data generate`)")
    return pd.read_parquet(path)


def replay_paths(library_id: str, root=None) -> dict[str, tuple[dict, np.ndarray]]:
    """experience_id -> (base layout as stored, recorded path (T, 6)): what Replay executes."""
    frame = read_experiences(library_id, root)
    return {row.experience_id: (json.loads(row.base_layout),
                                np.asarray(row.path, dtype=np.float64).reshape(-1, 6))
            for row in frame.itertuples()}


def rejection_counts(library_id: str, root=None) -> tuple[int, int]:
    """(accepted, rejected) draws of the recording stream."""
    path = library_dir(library_id, root) / "stream.parquet"
    if not path.exists():
        raise LibraryNotFoundError(f"library {library_id!r}: {path} does not exist")
    frame = pd.read_parquet(path)
    n_acc = int(frame["accepted"].sum())
    return n_acc, int(len(frame) - n_acc)
