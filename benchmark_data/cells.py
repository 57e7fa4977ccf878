"""Stored cells: the consolidated Parquet table plus the journal of a run in progress."""

from __future__ import annotations

import os

import pandas as pd

from benchmark_data.journal import CELL_COLUMNS, KEY_COLUMNS, read_journal_frame
from benchmark_data.paths import cells_journal, cells_table

__all__ = ["CELL_COLUMNS", "KEY_COLUMNS", "consolidate", "load_cells"]


def load_cells(mechanism: str, query_set: str, root=None) -> pd.DataFrame:
    """All stored cells of (mechanism, query set): table plus journal, one row per key."""
    frames = []
    table = cells_table(mechanism, query_set, root)
    if table.exists():
        frames.append(pd.read_parquet(table))
    journal = cells_journal(mechanism, query_set, root)
    if journal.exists():
        frames.append(read_journal_frame(journal))
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
