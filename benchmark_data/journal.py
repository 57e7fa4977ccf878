"""The journal of a run in progress: one JSON line per executed cell, appended and flushed.

The data side's one owner of the format: its columns, reading (a torn last line from a
killed run is ignored), appending, and repairing a torn line before a run resumes. The
executor writes and reads the same format with its own copy, which it keeps until a change
of the Replay mechanism version (its bytes are part of every stored cell's code version).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

CELL_COLUMNS = ("mechanism", "query_set", "experience_id", "state_id", "seed", "success",
                "state_hash", "final_hash", "wall_s", "code_version", "packages")
"""The fields of a journal record, and the columns of a consolidated cells table."""
KEY_COLUMNS = ("mechanism", "query_set", "experience_id", "state_id", "seed")
"""The fields that name a cell; a key appears once in the stored cells."""


def read_journal(path: Path) -> list[dict]:
    """Records of a journal file, in order; a torn last line (killed mid-write) is ignored."""
    if not path.exists():
        return []
    records = []
    with path.open() as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # a partially written last line from a killed run
            records.append(json.loads(line))
    return records


def read_journal_frame(path: Path) -> pd.DataFrame:
    """A journal as a table with the columns `CELL_COLUMNS`."""
    return pd.DataFrame.from_records(read_journal(path), columns=list(CELL_COLUMNS))


def append_records(path: Path, records: Iterable[dict]) -> int:
    """Append records to a journal, one sorted-key JSON line each, flushed line by line.

    Returns the number of records written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a") as fh:
        for record in records:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            n += 1
    return n


def repair_torn_line(path: Path) -> bool:
    """Cut a torn last line (a run killed mid-write) so that appends start on a fresh line.

    Returns whether anything was cut.
    """
    if not path.exists() or path.stat().st_size == 0:
        return False
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return False
    path.write_bytes(data[: data.rfind(b"\n") + 1])
    return True
