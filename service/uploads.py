"""Reading an uploaded scores file and validating it against the catalog.

Formats: CSV (every cell read as text), Parquet, JSON (a list of row
objects, or ``{"rows": [...]}``). Columns as `leaderboard.io` expects
(`scene_id,experience_id,score`, or without `score` for selection-only),
plus an optional `setting_id` column that lets one upload cover many
settings. Line numbers in errors are those of the uploaded file (header =
line 1), also when the rows of one setting are validated on their own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.io import parse_scores_table
from leaderboard.io_cells import read_csv_bytes
from leaderboard.scores_fast import plain_csv_frame
from service.catalog import Catalog, UnknownSetting
from service.errors import ValidationFailed
from service.parquet_upload import read_bounded_parquet
from service.upload_limits import UploadLimits, catalog_limits, count_rows_upper_bound

FORMATS = ("csv", "parquet", "json")
MAX_PARQUET_ROWS = 1_000_000
"""Rows a Parquet upload may hold (a CSV within the upload limit holds at most about as many)."""
MAX_PARQUET_UNPACKED_BYTES = 256 * 1024 * 1024
"""Size a Parquet upload may decode to: checked against its footer first, then against what
is really decoded, batch by batch (a footer can understate it a thousandfold)."""
MAX_PARQUET_CELL_CHARS = 1024
"""Longest text cell (bytes) of a Parquet upload; ids are a few dozen characters, and a
longer cell is refused from the file's dictionary before it is repeated into every row."""
MAX_PARQUET_COLUMNS = 16
"""Columns a Parquet upload may have: the scores table has four (plus a stored index)."""
MAX_PARQUET_PAGE_BYTES = 64 * 1024 * 1024
"""Largest page of a Parquet upload, as its header states before it is decompressed: writers
make pages of about 1 MB (pyarrow: 1 MB or 20,000 rows); a hostile page can ask for 2 GB."""
NUMBER_COLUMNS = ("score",)
"""Columns that must hold numbers: a Parquet text column there is refused from its type."""
JSON_KEYS = ("setting_id", "scene_id", "experience_id", "score")
"""Keys a JSON row may have: any other is refused in the row loop, before a table is built
(a new key per row would otherwise make a column per key, rows x keys cells)."""
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}
_CONTENT_TYPES = {"text/csv": "csv", "application/vnd.apache.parquet": "parquet",
                  "application/x-parquet": "parquet", "application/json": "json"}


@dataclass(frozen=True)
class ValidatedScores:
    """The scores of one setting from an upload."""

    setting_id: str
    scores: np.ndarray
    selection_only: bool


def detect_format(filename: str | None, content_type: str | None, explicit: str | None) -> str:
    """The upload's format: the `format` field, else the file suffix, else the content type."""
    if explicit:
        if explicit not in FORMATS:
            raise ValidationFailed(f"format must be one of {list(FORMATS)}, got '{explicit}'",
                                   field="format")
        return explicit
    if filename:
        for suffix, fmt in _SUFFIXES.items():
            if filename.lower().endswith(suffix):
                return fmt
    if content_type:
        fmt = _CONTENT_TYPES.get(content_type.split(";")[0].strip().lower())
        if fmt:
            return fmt
    raise ValidationFailed(
        f"cannot tell the format of '{filename or 'the upload'}': name the file *.csv, "
        "*.parquet or *.json, or pass format=csv|parquet|json", field="format")


def read_frame(data: bytes, fmt: str, source: str, catalog: Catalog | None = None) -> pd.DataFrame:
    """Parse the upload into a table; errors name the file.

    At most `MAX_PARQUET_ROWS` rows in any format (a CSV or JSON upload is
    counted before it is parsed) and `MAX_PARQUET_UNPACKED_BYTES` decoded
    Parquet, each raised to what a full file of the catalog's largest setting
    needs (`service.upload_limits.catalog_limits`).
    """
    if not data:
        raise InputError(source, "file is empty")
    limits = UploadLimits() if catalog is None else catalog_limits(catalog)
    max_rows = limits.row_limit(MAX_PARQUET_ROWS)
    if fmt != "parquet" and count_rows_upper_bound(data, fmt) > max_rows:
        raise InputError(source, f"has more than {max_rows} rows; at most {max_rows} are read")
    if fmt == "csv":
        frame = plain_csv_frame(data)  # read as columns when plainly well formed; else strictly
        return read_csv_bytes(data, source) if frame is None else frame
    if fmt == "parquet":
        return read_bounded_parquet(data, source, max_rows=max_rows,
                                    max_bytes=limits.decoded_limit(MAX_PARQUET_UNPACKED_BYTES),
                                    max_cell_chars=MAX_PARQUET_CELL_CHARS,
                                    max_columns=MAX_PARQUET_COLUMNS, number_columns=NUMBER_COLUMNS,
                                    max_page_bytes=MAX_PARQUET_PAGE_BYTES)
    return _json_frame(data, source)


def _json_frame(data: bytes, source: str) -> pd.DataFrame:
    """Rows of a JSON upload, every value as written (a missing key or null is an empty cell)."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, and integers too long to read
        raise InputError(source, f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(source, "is not valid JSON: nested too deeply") from None
    rows = document.get("rows") if isinstance(document, dict) else document
    if not isinstance(rows, list) or not rows:
        raise InputError(source, "JSON must be a non-empty list of row objects or {\"rows\": [...]}",
                         field="rows")
    known = set(JSON_KEYS)
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(source, "is not an object", line=position + 2, field="rows",
                             value=json.dumps(row)[:80])
        if not known.issuperset(row):
            key = next(k for k in row if k not in known)
            raise InputError(source, f"has the key '{key[:80]}', not a known column (expected: "
                             f"{', '.join(JSON_KEYS)})", line=position + 2, field="header",
                             value=key[:80])
    columns = [c for c in JSON_KEYS if any(c in row for row in rows)]
    return pd.DataFrame({c: [row.get(c) for row in rows] for c in columns}, dtype=object)


def requested_settings(field_value: str | None) -> list[str]:
    """Settings named by the `setting` field (comma-separated)."""
    if not field_value:
        return []
    return [s.strip() for s in field_value.split(",") if s.strip()]


def split_by_setting(frame: pd.DataFrame, requested: list[str], source: str) -> dict[str, pd.DataFrame]:
    """Rows per setting: by the `setting_id` column, or all rows for the one requested setting."""
    if "setting_id" not in frame.columns:
        if len(requested) != 1:
            raise ValidationFailed(
                "name exactly one setting (field 'setting') or add a 'setting_id' column "
                f"to the file; got {requested or 'none'}", field="setting")
        return {requested[0]: frame}
    ids = frame["setting_id"].astype(str)
    groups = {sid: frame.loc[ids == sid].drop(columns=["setting_id"]) for sid in dict.fromkeys(ids)}
    if requested and set(requested) != set(groups):
        raise ValidationFailed(
            f"field 'setting' names {sorted(requested)} but the file's setting_id column holds "
            f"{sorted(groups)}", field="setting")
    return groups


def _shift_line(error: InputError, index: pd.Index, source: str) -> InputError:
    """Map a line of the per-setting table back to the line of the uploaded file."""
    if error.line is None:
        return error
    position = error.line - 2
    line = int(index[position]) + 2 if 0 <= position < len(index) else error.line
    return InputError(source, error.message, line=line, field=error.field, value=error.value)


def validate_upload(frame: pd.DataFrame, requested: list[str], catalog: Catalog,
                    source: str) -> list[ValidatedScores]:
    """Validate every setting's rows against its library and query set."""
    for setting_id in requested:
        catalog.get_setting(setting_id, field="setting")
    out = []
    for setting_id, rows in split_by_setting(frame, requested, source).items():
        try:
            data = catalog.load_transfer(setting_id)
        except UnknownSetting:
            line = None
            if "setting_id" in frame.columns:
                line = int(np.flatnonzero(frame["setting_id"].astype(str) == setting_id)[0]) + 2
            raise InputError(source, "is not a known setting", line=line, field="setting_id",
                             value=setting_id) from None
        try:
            parsed = parse_scores_table(rows.reset_index(drop=True), data.experience_ids,
                                        data.scenes.scene_ids, source=source)
        except InputError as exc:
            raise _shift_line(exc, rows.index, source) from None
        out.append(ValidatedScores(setting_id, parsed.scores, parsed.selection_only))
    return sorted(out, key=lambda v: v.setting_id)
