"""Reading tables and parsing their cells, every failure an `InputError` with file/line/field/value.

Line convention (see `leaderboard.errors`): the header is line 1, data row r
(counted from 0) is line r + 2, for CSV, Parquet and uploaded tables alike.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.errors import InputError

FIRST_DATA_LINE = 2
"""Line number of the first data row: line 1 is the header."""
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)", re.ASCII | re.IGNORECASE)
"""The decimal numbers a cell may hold (non-finite ones are refused where finite numbers are needed)."""


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV (every cell as text) or Parquet file; errors name the file."""
    source = str(path)
    suffix = Path(path).suffix.lower()
    if Path(path).is_dir():
        raise InputError(source, "is a directory, not a file")
    if suffix not in (".csv", ".parquet", ".pq"):
        raise InputError(source, f"unsupported file type '{suffix}': use .csv or .parquet")
    if not Path(path).is_file():
        raise InputError(source, "file not found")
    if suffix == ".csv":
        return _read_csv(Path(path), source)
    return read_parquet(path, source)


def read_parquet(file, source: str, *, max_rows: int | None = None,
                 max_bytes: int | None = None) -> pd.DataFrame:
    """Read a Parquet file (a path or a binary file object); errors name `source`.

    A stored pandas index is dropped (it is not data). Malformed pandas
    metadata in the file's schema is reported like any unreadable file.
    `max_rows` and `max_bytes` (uncompressed) refuse a file from its footer,
    before anything is decompressed: a small upload can unpack to gigabytes.
    """
    try:
        if max_rows is not None or max_bytes is not None:
            _check_parquet_size(file, source, max_rows, max_bytes)
        frame = pd.read_parquet(file)
    except InputError:
        raise
    except (ValueError, OSError, KeyError, TypeError, AttributeError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(source, f"cannot be read as parquet: {first_line}") from None
    return frame.reset_index(drop=True)


def _check_parquet_size(file, source: str, max_rows: int | None, max_bytes: int | None) -> None:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(file).metadata
    unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if max_rows is not None and meta.num_rows > max_rows:
        raise InputError(source, f"has {meta.num_rows} rows; at most {max_rows} are read")
    if max_bytes is not None and unpacked > max_bytes:
        raise InputError(source, f"unpacks to {unpacked} bytes; at most {max_bytes} are read")
    if hasattr(file, "seek"):
        file.seek(0)


def _read_csv(path: Path, source: str) -> pd.DataFrame:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(source, f"cannot be read: {exc.strerror or exc}") from None
    return read_csv_bytes(data, source)


def read_csv_bytes(data: bytes, source: str) -> pd.DataFrame:
    """Read CSV text (UTF-8) with the standard library so that every row keeps its true line number.

    Every cell stays text. Rows with more or fewer fields than the header,
    blank lines and quoted fields spanning several lines are errors (pandas
    would silently shift a long first row into an index, skip blank lines, or
    renumber lines).
    """
    try:
        reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""))
        header = next(reader, None)
        if header is None:
            raise InputError(source, "file is empty (no header line)")
        rows = []
        for row in reader:
            line = len(rows) + FIRST_DATA_LINE
            if reader.line_num != line:
                raise InputError(
                    source, "a quoted field spans several lines; every row must be one line", line=line
                )
            if not row:
                raise InputError(source, "is a blank line; remove it", line=line)
            if len(row) != len(header):
                raise InputError(
                    source, f"has {len(row)} fields, the header has {len(header)}", line=line
                )
            rows.append(row)
    except UnicodeDecodeError as exc:
        raise InputError(source, f"is not UTF-8 text (bad byte at offset {exc.start})") from None
    except csv.Error as exc:
        raise InputError(source, f"cannot be read: {exc}") from exc
    return pd.DataFrame(rows, columns=header, dtype=object)


def _text(value: object) -> str:
    """A cell as text: missing -> "", floats as Python writes them ("nan", "1.0")."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    return str(value)


class Cells:
    """The cells of one table and the parsers that check them.

    Every parser returns one value per row or raises `InputError` at the first
    bad cell, naming `source`, its line, the column and the value.
    """

    def __init__(self, frame: pd.DataFrame, source: str) -> None:
        self.frame = frame
        self.source = source

    def error(
        self, message: str, position: int | None = None, field: str | None = None, value: object = None
    ) -> InputError:
        line = None if position is None else position + FIRST_DATA_LINE
        return InputError(self.source, message, line=line, field=field, value=value)

    def check_columns(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        """Every required column present, none unexpected (extra data is never ignored), data rows
        present. A column error lists the columns expected and echoes those the table has."""
        names = [str(c) for c in self.frame.columns]
        expected = ", ".join(required + optional)
        found = f"the file's columns: {', '.join(name[:80] for name in names[:20])}"
        found += ", ..." if len(names) > 20 else ""
        for column in required:
            if column not in names:
                raise self.error(f"missing column (expected columns: {expected}); {found}",
                                 field=column)
        for column in names:
            if column not in required + optional:
                raise self.error(f"is not a known column (expected: {expected}); {found}",
                                 field="header", value=column)
        if len(set(names)) != len(names):
            raise self.error("has a repeated column name", field="header")
        if len(self.frame) == 0:
            raise self.error("has no data rows")

    def text(self, column: str) -> list[str]:
        return [_text(v) for v in self.frame[column].tolist()]

    def ids(self, column: str) -> list[str]:
        """Non-empty identifiers, exactly as written (no stripping)."""
        values = self.text(column)
        for position, value in enumerate(values):
            if value == "":
                raise self.error("is empty", position, column, value)
        return values

    def _numbers(self, column: str):
        for position, text in enumerate(self.text(column)):
            if text.strip() == "":
                raise self.error("is empty", position, column, text)
            if not _NUMBER.fullmatch(text.strip()):  # float() would also take "1_000" and non-ASCII digits
                raise self.error("is not a number", position, column, text)
            yield position, text, float(text)

    def integers(self, column: str) -> list[int]:
        out = []
        for position, text, number in self._numbers(column):
            if not math.isfinite(number) or not number.is_integer():
                raise self.error("is not an integer", position, column, text)
            out.append(int(number))
        return out

    def finite(self, column: str) -> list[float]:
        out = []
        for position, text, number in self._numbers(column):
            if not math.isfinite(number):
                raise self.error("is not a finite number", position, column, text)
            out.append(number)
        return out

    def binary(self, column: str) -> list[int]:
        out = []
        for position, text, number in self._numbers(column):
            if number not in (0.0, 1.0):
                raise self.error("is not a binary outcome (0 or 1)", position, column, text)
            out.append(int(number))
        return out

    def index_of(self, column: str, known: tuple[str, ...], what: str) -> np.ndarray:
        """Position of each id in `known`; an id not there is an error naming `what`."""
        lookup = {value: index for index, value in enumerate(known)}
        out = np.empty(len(self.frame), dtype=np.int64)
        for position, value in enumerate(self.ids(column)):
            if value not in lookup:
                raise self.error(f"is not a known {what}", position, column, value)
            out[position] = lookup[value]
        return out

    def unique(self, values: list, field: str, what: str) -> None:
        """Raise on the first repeated value (tuples for compound keys), naming both lines."""
        first: dict = {}
        for position, value in enumerate(values):
            if value in first:
                shown = ", ".join(map(str, value)) if isinstance(value, tuple) else value
                raise self.error(
                    f"repeats the {what} of line {first[value] + FIRST_DATA_LINE}", position, field, shown
                )
            first[value] = position
