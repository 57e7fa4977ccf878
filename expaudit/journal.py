"""The journal of a run in progress: one JSON line (sorted keys) per executed cell.

The one owner of the line format, for the executors that write journals (`simulator`) and the
data readers that fold them into cells tables (`benchmark_data.cells`), which may not import
each other: the columns, reading (a torn last line from a killed run is ignored) and appending
one record under a lock (a torn line is cut first). Standard library only, a leaf like
`expaudit.errors`.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

__all__ = ["CELL_COLUMNS", "KEY_COLUMNS", "append_record", "journal_keys", "read_journal"]

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


def journal_keys(path: Path) -> set[tuple]:
    """The keys (`KEY_COLUMNS` values) of the cells a journal holds: the cells a rerun skips."""
    return {tuple(record[k] for k in KEY_COLUMNS) for record in read_journal(path)}


def append_record(journal: Path, record: dict) -> None:
    """Append one cell to a journal under an exclusive lock, one write per line, synced.

    A torn last line (a run killed mid-write) is cut first, so the new line never
    continues it.
    """
    journal.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(journal, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            tail = os.pread(fd, min(size, 1 << 16), max(0, size - (1 << 16)))
            if not tail.endswith(b"\n"):
                cut = tail.rfind(b"\n")
                os.ftruncate(fd, size - len(tail) + cut + 1 if cut >= 0 else 0)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
