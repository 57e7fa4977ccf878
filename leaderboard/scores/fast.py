"""A columnar reader for large, well-formed score files; anything else goes to the strict reader.

The companion of `leaderboard.outcomes_fast` for score files (K x Q rows: 2,000,000 at
lab scale). Each function returns the (K, Q) score matrix (or the table) only when the
strict reader (`leaderboard.scores.table.parse_scores_table`) would give the same;
otherwise None, and the strict reader runs and gives its result or its error as always.
`fast_scores` reads `expaudit audit`'s file; uploads (`leaderboard.scores.upload`) take
the same two steps on bytes and tables (`plain_csv_frame`, then `fast_score_frame`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.outcomes_fast import id_codes, read_plain_csv, read_plain_csv_bytes

SCORE_COLUMNS = ("scene_id", "experience_id", "score")
_PLAIN_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_PLAIN_NUMBER_RE = re.compile(_PLAIN_NUMBER)


def fast_scores(path: str | Path, experience_ids: tuple[str, ...],
                scene_ids: tuple[str, ...]) -> np.ndarray | None:
    """Score matrix (K, Q) of a well-formed full score file, or None (use the strict reader).

    Taken only when: the header is exactly `scene_id,experience_id,score`; a
    CSV has no quote, no bare CR, no byte-order mark and no blank line; every
    id is known; every score is written as a plain decimal number without
    spaces (`0.5`, `-3`, `1e-4`; converted by Python's `float`, as the strict
    reader does) or, in Parquet, stored as floating point or integers; every
    score is finite; every (scene, experience) pair appears exactly once.
    Selection-only tables (no `score` column) are small and always read strictly.
    """
    import pyarrow as pa

    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = read_plain_csv(path, plain_text=("score",))
        elif suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            if any(isinstance(c, str) for c in (table.schema.pandas_metadata or {}).get("index_columns", [])):
                return None  # the strict reader drops a stored pandas index, columns and all
        else:
            return None
    except (OSError, ValueError, pa.ArrowException):
        return None
    if table is None or sorted(table.column_names) != sorted(SCORE_COLUMNS) or table.num_rows == 0:
        return None
    shape = (len(experience_ids), len(scene_ids))
    if table.num_rows != shape[0] * shape[1]:
        return None  # missing or repeated pairs: the strict reader names the first
    exp = id_codes(table.column("experience_id"), {v: i for i, v in enumerate(experience_ids)})
    scn = id_codes(table.column("scene_id"), {v: i for i, v in enumerate(scene_ids)})
    values = _numbers(table.column("score"))
    if exp is None or scn is None or values is None or not np.isfinite(values).all():
        return None
    del table
    cell = exp.astype(np.int64)
    cell *= shape[1]
    cell += scn
    seen = np.zeros(shape[0] * shape[1], dtype=bool)
    seen[cell] = True
    if not seen.all():  # as many rows as pairs, so a repeated pair leaves another unseen
        return None
    scores = np.empty(shape)
    scores.reshape(-1)[cell] = values
    return scores


def _numbers(column) -> np.ndarray | None:
    """float64 values of the score column as the strict reader reads them, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        return None
    if pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
        return column.to_numpy().astype(np.float64)
    if not pa.types.is_string(column.type):
        return None
    if not pc.all(pc.match_substring_regex(column, _PLAIN_NUMBER)).as_py():
        return None
    return column.to_numpy(zero_copy_only=False).astype(np.float64)  # Python's float() per cell


def plain_csv_frame(data: bytes) -> pd.DataFrame | None:
    """The table `leaderboard.io_cells.read_csv_bytes` reads from these bytes (every cell text),
    read as columns; None when the strict reader might read them differently (then use it)."""
    import pyarrow as pa

    try:
        table = read_plain_csv_bytes(data, plain_text=None)
    except (ValueError, pa.ArrowException):  # not UTF-8, a row of the wrong length, ...
        return None
    if table is None or table.num_rows == 0:
        return None
    frame = table.to_pandas()
    return frame.astype(object) if any(dtype != object for dtype in frame.dtypes) else frame


def fast_score_frame(frame: pd.DataFrame, experience_ids: tuple[str, ...],
                     scene_ids: tuple[str, ...]) -> np.ndarray | None:
    """Score matrix (K, Q) of a full score table (an upload's rows), or None (use the strict check).

    Taken only when the columns are exactly `scene_id, experience_id, score`,
    every id is a known id written as text, every score is a plain decimal
    text (or a float column) and finite, and every pair appears exactly once.
    """
    if sorted(map(str, frame.columns)) != sorted(SCORE_COLUMNS) or len(frame) == 0:
        return None
    shape = (len(experience_ids), len(scene_ids))
    if len(frame) != shape[0] * shape[1]:
        return None
    exp = _frame_codes(frame["experience_id"], experience_ids)
    scn = _frame_codes(frame["scene_id"], scene_ids)
    values = _frame_numbers(frame["score"])
    if exp is None or scn is None or values is None or not np.isfinite(values).all():
        return None
    cell = exp * shape[1] + scn
    seen = np.zeros(shape[0] * shape[1], dtype=bool)
    seen[cell] = True
    if not seen.all():
        return None
    scores = np.empty(shape)
    scores.reshape(-1)[cell] = values
    return scores


def _frame_codes(column: pd.Series, ids: tuple[str, ...]) -> np.ndarray | None:
    """Position of each cell's id in `ids` (cells must be text), or None."""
    values = column.to_numpy()
    if values.dtype != object or not all(type(v) is str for v in pd.unique(values)):
        return None
    codes = pd.Index(ids).get_indexer(values)
    return None if (codes < 0).any() else codes.astype(np.int64)


def _frame_numbers(column: pd.Series) -> np.ndarray | None:
    """float64 of a score column as the strict check reads it: plain decimal texts or floats."""
    values = column.to_numpy()
    if values.dtype == np.float64:
        return values
    if values.dtype != object:
        return None
    for value in values:
        if type(value) is not str or not _PLAIN_NUMBER_RE.fullmatch(value):
            return None
    return values.astype(np.float64)  # Python's float() per cell, as the strict check
