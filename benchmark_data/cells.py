"""Stored cells: the consolidated Parquet table plus the journal of a run in progress."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager

import pandas as pd

from benchmark_data.paths import cells_journal, cells_table, computed_journal, root_or_default
from expaudit.errors import InvalidInput
from expaudit.journal import CELL_COLUMNS, KEY_COLUMNS, read_journal

__all__ = ["CELL_COLUMNS", "KEY_COLUMNS", "WRITERS_LOCK", "consolidate", "load_cells", "writers_excluded",
           "writing_cells"]

WRITERS_LOCK = "cells/.writers.lock"
"""Under a data root: held shared by every generation run writing its cells, exclusive by a step
that rewrites or moves its tables (a run's executors keep their journals open, so folding a
journal under them would lose the lines they write next)."""


def _lock(root, mode: int, what: str, holder: str) -> int:
    """An fd of the root's writers lock, locked in `mode` without waiting; refused as a user
    error naming `holder` while another process holds it the other way."""
    path = root_or_default(root) / WRITERS_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InvalidInput(f"{what}: {holder} under {path.parent.parent}; wait for it to end or "
                           "stop it first") from None
    except OSError as exc:  # a file system without locks (NFS mounted nolock)
        os.close(fd)
        raise InvalidInput(f"{what}: {path} cannot be locked here ({exc.strerror}); run on a "
                           "local disk") from None
    return fd


@contextmanager
def writing_cells(root=None):
    """Mark a generation run writing cells under `root` for as long as the block runs; refused
    while a step that rewrites the tables holds the root."""
    fd = _lock(root, fcntl.LOCK_SH, "generate", "adopt-staging or --drop-stale is rewriting the cells")
    try:
        yield
    finally:
        os.close(fd)


@contextmanager
def writers_excluded(root=None, what: str = "this step"):
    """Hold off generation runs under `root` while the block rewrites its tables; refused at
    once, naming the root, while one runs."""
    fd = _lock(root, fcntl.LOCK_EX, what, "a generate run is writing cells")
    try:
        yield
    finally:
        os.close(fd)


def load_cells(mechanism: str, query_set: str, root=None, computed=None) -> pd.DataFrame:
    """All stored cells of (mechanism, query set), one row per key: the frozen root's table and
    journal, then the journal of the computed-cells directory `computed` (None: none); a key
    stored in both keeps its published cell."""
    frames = []
    table = cells_table(mechanism, query_set, root)
    if table.exists():
        frames.append(pd.read_parquet(table))
    journals = [cells_journal(mechanism, query_set, root)]
    if computed is not None:
        journals.append(computed_journal(mechanism, query_set, computed))
    for journal in journals:
        if journal.exists():
            frames.append(pd.DataFrame.from_records(read_journal(journal), columns=list(CELL_COLUMNS)))
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    frame = pd.concat(frames, ignore_index=True)
    return frame.drop_duplicates(list(KEY_COLUMNS), keep="first").reset_index(drop=True)


def consolidate(mechanism: str, query_set: str, root=None) -> int:
    """Fold the journal into the Parquet table (atomic replace), then remove the journal.

    Returns the number of cells in the table afterwards.
    """
    journal = cells_journal(mechanism, query_set, root)
    frame = load_cells(mechanism, query_set, root)
    if not journal.exists():
        return len(frame)
    table = cells_table(mechanism, query_set, root)
    table.parent.mkdir(parents=True, exist_ok=True)
    frame = frame.sort_values(list(KEY_COLUMNS)).reset_index(drop=True)
    frame["seed"] = frame["seed"].astype("int64")
    frame["success"] = frame["success"].astype("int8")
    tmp = table.with_suffix(".parquet.tmp")
    frame.to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, table)
    journal.unlink()
    return len(frame)
