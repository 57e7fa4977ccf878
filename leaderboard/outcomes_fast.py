"""A columnar reader for large, well-formed outcome files; anything else goes to the strict reader.

`leaderboard.io.parse_outcomes` checks every cell in Python so that an error
names its line, field and value; at lab scale (K = 1,000 x 2,000 scenes x 5
seeds = 10,000,000 rows) that costs about 40 s and 3.5 GB. This reader
reads the file with pyarrow (CSV or Parquet) as columns, checks the same
rules on each column's distinct values and on the index arrays, and returns
the tensor only when every rule holds and the file is one the strict reader
reads the same way; otherwise it returns None and the caller runs the strict
reader, which then gives the same result or the same error as always.

Taken only when: the header is exactly the four outcome columns; a CSV has
no quote, no bare CR, no byte-order mark and no blank line; every id is
known; every seed is written as a plain non-negative integer (`0`, `17`);
every success is `0` or `1` (Parquet: integer columns are read as such);
every (experience, scene, seed) appears exactly once; a Parquet file stores
no pandas index column. The plain-CSV reading and the id coding are shared
with `leaderboard.scores_fast`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from leaderboard.matrix import MISSING

OUTCOME_COLUMNS = ("experience_id", "scene_id", "seed", "success")
_PLAIN_SEED = re.compile(r"0|[1-9][0-9]{0,17}")


def fast_outcomes(path: str | Path, experience_ids: tuple[str, ...],
                  scene_ids: tuple[str, ...]) -> np.ndarray | None:
    """Outcome tensor (K, Q, S) int8 of a well-formed file, or None (use the strict reader)."""
    import pyarrow as pa

    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = read_plain_csv(path)
        elif suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            stored_index = (table.schema.pandas_metadata or {}).get("index_columns", [])
            if any(isinstance(column, str) for column in stored_index):
                return None  # the strict reader drops a stored pandas index, columns and all
        else:
            return None
    except (OSError, ValueError, pa.ArrowException):
        return None
    if table is None or sorted(table.column_names) != sorted(OUTCOME_COLUMNS) or table.num_rows == 0:
        return None
    exp = id_codes(table.column("experience_id"), {v: i for i, v in enumerate(experience_ids)})
    scn = id_codes(table.column("scene_id"), {v: i for i, v in enumerate(scene_ids)})
    seeds = _seed_index(table.column("seed"))
    success = _integers(table.column("success"), {"0": 0, "1": 1}.get)
    if exp is None or scn is None or seeds is None or success is None or not np.isin(success, (0, 1)).all():
        return None
    seed_index, n_seeds = seeds
    shape = (len(experience_ids), len(scene_ids), n_seeds)
    n_cells = shape[0] * shape[1] * shape[2]
    if table.num_rows != n_cells:
        return None  # missing or repeated rows: the strict reader names the first
    del table
    cell = exp.astype(np.int64)
    cell *= shape[1]
    cell += scn
    cell *= shape[2]
    cell += seed_index
    seen = np.zeros(n_cells, dtype=bool)
    seen[cell] = True
    if not seen.all():  # as many rows as cells, so a repeated cell leaves another unseen
        return None
    outcomes = np.full(shape, MISSING, dtype=np.int8)
    outcomes.reshape(-1)[cell] = success
    return outcomes


def read_plain_csv(path: Path, plain_text: tuple[str, ...] = ()):
    """The CSV as text columns (dictionaries, except `plain_text`), or None when the strict
    reader might read it differently."""
    return read_plain_csv_bytes(path.read_bytes(), plain_text)


def read_plain_csv_bytes(data: bytes, plain_text: tuple[str, ...] | None = ()):
    """`read_plain_csv` of CSV bytes; `plain_text=None` reads every column as plain text."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if b'"' in data or data.startswith(b"\xef\xbb\xbf") or data.count(b"\r") != data.count(b"\r\n"):
        return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if b"\n\n" in data or data.startswith(b"\n") or b"\n\r\n" in data:
        return None
    header = data.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8").split(",")
    if len(set(header)) != len(header):
        return None
    plain = set(header if plain_text is None else plain_text)
    table = pacsv.read_csv(
        pa.py_buffer(data),
        read_options=pacsv.ReadOptions(use_threads=False),
        parse_options=pacsv.ParseOptions(ignore_empty_lines=False, newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(column_types={name: pa.string() if name in plain
                                                           else pa.dictionary(pa.int32(), pa.string())
                                                           for name in header},
                                             strings_can_be_null=False, quoted_strings_can_be_null=False),
    )
    return table if table.num_rows == lines - 1 and table.column_names == header else None


def id_codes(column, lookup: dict[str, int]) -> np.ndarray | None:
    """Index of each cell's id in `lookup`, from the column's distinct values; None if one is unknown."""
    encoded = _dictionary(column)
    if encoded is None:
        return None
    mapping = np.array([lookup.get(value, -1) for value in encoded.dictionary.to_pylist()], dtype=np.int64)
    if (mapping < 0).any():
        return None
    return mapping.astype(np.int32)[encoded.indices.to_numpy(zero_copy_only=False)]


def _dictionary(column):
    """The column as one dictionary array (distinct texts + an index per row), or None if not text."""
    import pyarrow as pa

    if column.null_count:
        return None
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    if pa.types.is_dictionary(column.type):
        return column.unify_dictionaries().combine_chunks()
    return column.combine_chunks().dictionary_encode()


def _seed_index(column) -> tuple[np.ndarray, int] | None:
    """(index of each row's seed among the sorted distinct seeds, number of seeds), or None.

    Seeds are plain non-negative integers (integer typed, or text like `0`, `17`).
    """
    import pyarrow as pa

    if column.null_count:
        return None
    if pa.types.is_integer(column.type):
        values, index = np.unique(column.to_numpy(), return_inverse=True)
        return (None if (values < 0).any() else (index.astype(np.int32).ravel(), len(values)))
    encoded = _dictionary(column)
    if encoded is None:
        return None
    texts = [_seed_value(text) for text in encoded.dictionary.to_pylist()]
    if any(value is None for value in texts):
        return None
    rank = {value: n for n, value in enumerate(sorted(set(texts)))}
    position = np.array([rank[value] for value in texts], dtype=np.int32)
    return position[encoded.indices.to_numpy(zero_copy_only=False)], len(rank)


def _seed_value(text: str) -> int | None:
    return int(text) if _PLAIN_SEED.fullmatch(text) else None


def _integers(column, parse) -> np.ndarray | None:
    """Integer values of a column (integer typed, or text parsed per distinct value); None if any fails."""
    import pyarrow as pa

    if column.null_count:
        return None
    if pa.types.is_integer(column.type):
        return column.to_numpy()
    encoded = _dictionary(column)
    if encoded is None:
        return None
    values = [parse(value) for value in encoded.dictionary.to_pylist()]
    if any(value is None for value in values):
        return None
    return np.array(values, dtype=np.int8)[encoded.indices.to_numpy(zero_copy_only=False)]
