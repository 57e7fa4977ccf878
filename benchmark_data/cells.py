"""Stored cells: the consolidated Parquet table plus the journal of a run in progress, and the
cells computed on demand (a directory's journal, or any `ComputedCells` source such as the
service's object store)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Hashable
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import pandas as pd

from benchmark_data.paths import cells_journal, cells_table, computed_journal, root_or_default
from expaudit.errors import InvalidInput
from expaudit.journal import CELL_COLUMNS, KEY_COLUMNS, read_journal

__all__ = ["CELL_COLUMNS", "KEY_COLUMNS", "WRITERS_LOCK", "ComputedCells", "consolidate",
           "load_cells", "writers_excluded", "writing_cells"]


@runtime_checkable
class ComputedCells(Protocol):
    """A source of cells computed on demand, beside the frozen root (read only here).

    `records` are journal records (`CELL_COLUMNS`); `signature` changes whenever `records`
    would, so a reader may cache what it built from them until it does.
    """

    def records(self, mechanism: str, query_set: str) -> list[dict]: ...

    def signature(self, mechanism: str, query_set: str) -> Hashable: ...


def _sources(computed) -> tuple:
    """`computed` as a tuple of sources: None is none, a path or a `ComputedCells` is one."""
    if computed is None:
        return ()
    if isinstance(computed, (tuple, list)):
        return tuple(c for c in computed if c is not None)
    return (computed,)

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
    journal, then the computed cells of `computed`: None (none), a computed-cells directory (its
    journal), a `ComputedCells` source, or a tuple of these, in order. A key stored twice keeps
    its first cell (a published cell wins)."""
    frames = []
    table = cells_table(mechanism, query_set, root)
    if table.exists():
        frames.append(pd.read_parquet(table))
    journals = [cells_journal(mechanism, query_set, root)]
    for source in _sources(computed):
        if isinstance(source, ComputedCells):
            journals.append(source.records(mechanism, query_set))
        else:
            journals.append(computed_journal(mechanism, query_set, source))
    for journal in journals:
        records = journal if isinstance(journal, list) else read_journal(journal)
        if records:
            frames.append(pd.DataFrame.from_records(records, columns=list(CELL_COLUMNS)))
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
