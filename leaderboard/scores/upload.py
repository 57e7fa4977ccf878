"""An uploaded scores file: its format, its table, and each setting's validated scores.

Formats: CSV (every cell read as text), Parquet, JSON (a list of row
objects, or ``{"rows": [...]}``), each read by its own module. Columns as
`leaderboard.scores.table` expects (`scene_id,experience_id,score`, or
without `score` for selection-only), plus an optional `setting_id` column
that lets one upload cover many settings. Line numbers in errors are those of
the uploaded file (header = line 1), also when the rows of one setting are
validated on their own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from expaudit.errors import InvalidInput, UnknownName
from leaderboard.errors import InputError
from leaderboard.io_cells import read_csv_bytes
from leaderboard.scores import limits as bounds
from leaderboard.scores.fast import plain_csv_frame
from leaderboard.scores.json_rows import read_json_rows
from leaderboard.scores.parquet import read_bounded_parquet
from leaderboard.scores.table import SettingScores, parse_scores_table

FORMATS = ("csv", "parquet", "json")
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}
_CONTENT_TYPES = {"text/csv": "csv", "application/vnd.apache.parquet": "parquet",
                  "application/x-parquet": "parquet", "application/json": "json"}


class FieldError(InvalidInput):
    """A field given beside a scores file (its format, the settings it covers) that cannot
    be used; `field` names it."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def detect_format(filename: str | None, content_type: str | None, explicit: str | None) -> str:
    """The upload's format: the `format` field, else the file suffix, else the content type."""
    if explicit:
        if explicit not in FORMATS:
            raise FieldError(f"format must be one of {list(FORMATS)}, got '{explicit}'",
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
    raise FieldError(
        f"cannot tell the format of '{filename or 'the upload'}': name the file *.csv, "
        "*.parquet or *.json, or pass format=csv|parquet|json", field="format")


def read_frame(data: bytes, fmt: str, source: str,
               limits: bounds.UploadLimits | None = None) -> pd.DataFrame:
    """Parse the upload into a table; errors name the file.

    At most `MAX_PARQUET_ROWS` rows in any format (a CSV or JSON upload is
    counted before it is parsed) and `MAX_PARQUET_UNPACKED_BYTES` decoded
    Parquet, each raised by `limits` to what a full file of the largest
    setting needs (`leaderboard.scores.limits`).
    """
    if not data:
        raise InputError(source, "file is empty")
    limits = limits or bounds.UploadLimits()
    max_rows = limits.row_limit(bounds.MAX_PARQUET_ROWS)
    if fmt != "parquet" and bounds.count_rows_upper_bound(data, fmt) > max_rows:
        raise InputError(source, f"has more than {max_rows} rows; at most {max_rows} are read")
    if fmt == "csv":
        frame = plain_csv_frame(data)  # read as columns when plainly well formed; else strictly
        return read_csv_bytes(data, source) if frame is None else frame
    if fmt == "parquet":
        return read_bounded_parquet(data, source, max_rows=max_rows,
                                    max_bytes=limits.decoded_limit(bounds.MAX_PARQUET_UNPACKED_BYTES),
                                    max_cell_chars=bounds.MAX_PARQUET_CELL_CHARS,
                                    max_columns=bounds.MAX_PARQUET_COLUMNS,
                                    number_columns=bounds.NUMBER_COLUMNS,
                                    max_page_bytes=bounds.MAX_PARQUET_PAGE_BYTES)
    return read_json_rows(data, source)


def requested_settings(field_value: str | None) -> list[str]:
    """Settings named by the `setting` field (comma-separated)."""
    if not field_value:
        return []
    return [s.strip() for s in field_value.split(",") if s.strip()]


def split_by_setting(frame: pd.DataFrame, requested: list[str], source: str) -> dict[str, pd.DataFrame]:
    """Rows per setting: by the `setting_id` column, or all rows for the one requested setting."""
    if "setting_id" not in frame.columns:
        if len(requested) != 1:
            raise FieldError(
                "name exactly one setting (field 'setting') or add a 'setting_id' column "
                f"to the file; got {requested or 'none'}", field="setting")
        return {requested[0]: frame}
    ids = frame["setting_id"].astype(str)
    groups = {sid: frame.loc[ids == sid].drop(columns=["setting_id"]) for sid in dict.fromkeys(ids)}
    if requested and set(requested) != set(groups):
        raise FieldError(
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


def validate_upload(frame: pd.DataFrame, requested: list[str], catalog,
                    source: str) -> list[SettingScores]:
    """Validate every setting's rows against its library and query set.

    `catalog` gives each setting: `get_setting(id, field=...)` and
    `load_transfer(id)`, raising an `UnknownName` for a setting it does not
    hold (the service's catalog; passed in).
    """
    for setting_id in requested:
        catalog.get_setting(setting_id, field="setting")
    out = []
    for setting_id, rows in split_by_setting(frame, requested, source).items():
        try:
            data = catalog.load_transfer(setting_id)
        except UnknownName:
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
        out.append(SettingScores(setting_id, parsed.scores, parsed.selection_only))
    return sorted(out, key=lambda v: v.setting_id)
