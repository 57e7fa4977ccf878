"""A scores file checked on the submitter's side, before it is sent or after a local selector run.

The rules are the service's (docs/metrics.md, "Scores"; `leaderboard.scores`),
read with the standard library so that the client installs alone:

- the format from the name: ``.csv``, ``.json`` (a list of row objects or
  ``{"rows": [...]}``), ``.parquet``/``.pq``;
- columns ``scene_id,experience_id,score`` (without ``score``: one pick per
  scene), plus an optional ``setting_id``; no other, none twice, one row at least;
- CSV: UTF-8, every row one line with as many fields as the header, no blank line;
- ids not empty; scores finite numbers as text (``1.5``, ``-2e-3``; not ``1_000``);
- each (setting, scene, experience) once; a selection names each scene once;
- with the setting's ids (an /input tree's ``setting.json``): every id known and
  every pair (every scene, for a selection) present.

A Parquet file is read only where pyarrow is installed; otherwise its magic
bytes are checked and the service checks the rest. Each problem is a
`BadScoresFile` naming the file, line (header = line 1), field and value, as the
service's own message would.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from expaudit_client.errors import BadScoresFile, BadSelectorInput

COLUMNS = ("setting_id", "scene_id", "experience_id", "score")
"""Every column a scores file may have, in the service's order."""

REQUIRED = ("scene_id", "experience_id")
"""The columns every scores file has (a selection-only file has no `score`)."""

SUFFIXES = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}
"""File name endings and the format each names (as the service reads them)."""

PARQUET_MAGIC = b"PAR1"
"""The bytes a Parquet file starts and ends with."""

_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)",
                     re.ASCII | re.IGNORECASE)
"""A number as the service reads a score (float() would also take "1_000" and other digits)."""

FIRST_DATA_LINE = 2
"""The line of the first row (the header, or a JSON file's opening, is line 1)."""


@dataclass(frozen=True)
class ScoresSummary:
    """What a checked scores file holds.

    fmt: csv, json or parquet; rows: data rows (None for a Parquet file not read);
    settings: the `setting_id` values, in order of appearance (empty without the
    column); selection_only: no `score` column; complete: every pair (or scene) of
    the ids given is present (None when no ids were given or the file was not read).
    """

    path: str
    fmt: str
    rows: int | None
    settings: tuple[str, ...]
    selection_only: bool | None
    complete: bool | None

    def to_dict(self) -> dict:
        return {"file": self.path, "format": self.fmt, "rows": self.rows,
                "settings": list(self.settings), "selection_only": self.selection_only,
                "complete": self.complete}


@dataclass(frozen=True)
class SettingIds:
    """A setting's ids in order, as its /input tree's `setting.json` lists them."""

    setting_id: str
    experience_ids: tuple[str, ...]
    scene_ids: tuple[str, ...]

    @classmethod
    def from_input(cls, input_dir: str | Path) -> "SettingIds":
        """The ids of the /input tree at `input_dir`."""
        path = Path(input_dir) / "setting.json"
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            return cls(str(info["setting_id"]), tuple(map(str, info["experience_ids"])),
                       tuple(map(str, info["scene_ids"])))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadSelectorInput(f"{path}: not a readable setting.json of an /input tree "
                                f"({exc})") from None


def scores_format(path: str | Path) -> str:
    """The format the service reads a file of this name as; refuses another ending."""
    fmt = SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise BadScoresFile(f"{path}: cannot tell the format: name the file *.csv, *.parquet "
                            "or *.json")
    return fmt


def error(source: str, message: str, *, line: int | None = None, field: str | None = None,
          value: object = None) -> BadScoresFile:
    """A `BadScoresFile` worded as the service words it: `FILE line N, field 'F': value 'V' ...`."""
    head = source + (f" line {line}" if line is not None else "")
    head += f", field '{field}'" if field is not None else ""
    text = f"{head}: value '{str(value)[:80]}' {message}" if value is not None else f"{head}: {message}"
    return BadScoresFile(text)


def check_scores_file(path: str | Path, *, ids: SettingIds | None = None,
                      source: str | None = None) -> ScoresSummary:
    """Check the scores file at `path` (against `ids` where given); returns what it holds."""
    path = Path(path)
    source = source or str(path)
    fmt = scores_format(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadScoresFile(f"{source}: cannot be read ({exc.strerror or exc})") from None
    if not data:
        raise error(source, "file is empty")
    if fmt == "parquet":
        table = _parquet_rows(data, source)
        if table is None:
            return ScoresSummary(str(path), fmt, None, (), None, None)
        columns, rows = table
    elif fmt == "json":
        columns, rows = _json_rows(data, source)
    else:
        columns, rows = _csv_rows(data, source)
    return _check_table(str(path), fmt, columns, rows, source, ids)


def _csv_rows(data: bytes, source: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV file, each row one line with as many fields as the header."""
    try:
        reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""))
        header = next(reader, None)
        if header is None:
            raise error(source, "file is empty (no header line)")
        rows = []
        for row in reader:
            line = len(rows) + FIRST_DATA_LINE
            if reader.line_num != line:
                raise error(source, "a quoted field spans several lines; every row must be one "
                            "line", line=line)
            if not row:
                raise error(source, "is a blank line; remove it", line=line)
            if len(row) != len(header):
                raise error(source, f"has {len(row)} fields, the header has {len(header)}",
                            line=line)
            rows.append(row)
    except UnicodeDecodeError as exc:
        raise error(source, f"is not UTF-8 text (bad byte at offset {exc.start})") from None
    except csv.Error as exc:
        raise error(source, f"cannot be read: {exc}") from None
    return header, rows


def _json_rows(data: bytes, source: str) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of a JSON file: a list of row objects, or {"rows": [...]}."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(source, f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise error(source, "is not valid JSON: nested too deeply") from None
    rows = document.get("rows") if isinstance(document, dict) else document
    if not isinstance(rows, list) or not rows:
        raise error(source, 'JSON must be a non-empty list of row objects or {"rows": [...]}',
                    field="rows")
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            raise error(source, "is not an object", line=position + FIRST_DATA_LINE,
                        field="rows", value=json.dumps(row)[:80])
        unknown = next((key for key in row if key not in COLUMNS), None)
        if unknown is not None:
            raise error(source, f"has the key '{unknown[:80]}', not a known column (expected: "
                        f"{', '.join(COLUMNS)})", line=position + FIRST_DATA_LINE,
                        field="header", value=unknown)
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    return columns, [[_text(row.get(c)) for c in columns] for row in rows]


def _parquet_rows(data: bytes, source: str):
    """Columns and rows of a Parquet file where pyarrow is installed; None where it is not
    (the magic bytes are checked either way)."""
    if not (data.startswith(PARQUET_MAGIC) and data.endswith(PARQUET_MAGIC)):
        raise error(source, "is not a Parquet file (it does not start and end with PAR1)")
    try:
        import pyarrow.parquet as pq  # optional: the client itself needs the standard library only
    except ImportError:
        return None
    try:
        table = pq.read_table(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 (pyarrow raises many kinds for a broken file)
        raise error(source, f"cannot be read as Parquet: {exc}") from None
    columns = [str(name) for name in table.column_names if not str(name).startswith("__index")]
    values = [table.column(name).to_pylist() for name in columns]
    return columns, [[_text(v) for v in row] for row in zip(*values)]


def _text(value: object) -> str:
    """A cell as the service sees it: missing -> "", anything else as Python writes it."""
    return "" if value is None else str(value)


def _check_table(path: str, fmt: str, columns: list[str], rows: list[list[str]], source: str,
                 ids: SettingIds | None) -> ScoresSummary:
    """Columns, cells, repeats and (with `ids`) coverage of one parsed table."""
    _check_columns(columns, rows, source)
    at = {name: columns.index(name) for name in columns}
    selection = "score" not in at
    settings: dict[str, None] = {}
    seen: dict[tuple, int] = {}
    for position, row in enumerate(rows):
        line = position + FIRST_DATA_LINE
        for name in ("setting_id", "scene_id", "experience_id"):
            if name in at and row[at[name]] == "":
                raise error(source, "is empty", line=line, field=name, value="")
        if not selection:
            _check_score(row[at["score"]], source, line)
        setting = row[at["setting_id"]] if "setting_id" in at else ""
        settings.setdefault(setting, None)
        key = (setting, row[at["scene_id"]]) + (() if selection else (row[at["experience_id"]],))
        if key in seen:
            what = "selection of scene" if selection else "(scene_id, experience_id)"
            field = "scene_id" if selection else "scene_id, experience_id"
            raise error(source, f"repeats the {what} of line {seen[key]}", line=line,
                        field=field, value=", ".join(key[1:]))
        seen[key] = line
    complete = None if ids is None else _check_ids(columns, rows, source, ids, selection)
    named = tuple(s for s in settings if s) if "setting_id" in at else ()
    return ScoresSummary(path, fmt, len(rows), named, selection, complete)


def _check_columns(columns: list[str], rows: list, source: str) -> None:
    names = [c for c in columns if c != "setting_id"]  # the service splits the file by it first
    expected = ", ".join(REQUIRED + ("score",))
    found = f"the file's columns: {', '.join(name[:80] for name in names[:20])}"
    found += ", ..." if len(names) > 20 else ""
    for column in REQUIRED:
        if column not in names:
            raise error(source, f"missing column (expected columns: {expected}); {found}",
                        field=column)
    for column in names:
        if column not in COLUMNS:
            raise error(source, f"is not a known column (expected: {expected}); {found}",
                        field="header", value=column)
    if len(set(columns)) != len(columns):
        raise error(source, "has a repeated column name", field="header")
    if not rows:
        raise error(source, "has no data rows")


def _check_score(text: str, source: str, line: int) -> None:
    if text.strip() == "":
        raise error(source, "is empty", line=line, field="score", value=text)
    if not _NUMBER.fullmatch(text.strip()):
        raise error(source, "is not a number", line=line, field="score", value=text)
    if not math.isfinite(float(text)):
        raise error(source, "is not a finite number", line=line, field="score", value=text)


def _check_ids(columns: list[str], rows: list[list[str]], source: str, ids: SettingIds,
               selection: bool) -> bool:
    """Every id known to the setting and every pair (or scene) present; True when so."""
    at = {name: columns.index(name) for name in columns}
    experiences, scenes = set(ids.experience_ids), set(ids.scene_ids)
    present = set()
    for position, row in enumerate(rows):
        line = position + FIRST_DATA_LINE
        if "setting_id" in at and row[at["setting_id"]] != ids.setting_id:
            raise error(source, f"is not this setting ({ids.setting_id})", line=line,
                        field="setting_id", value=row[at["setting_id"]])
        scene, experience = row[at["scene_id"]], row[at["experience_id"]]
        if scene not in scenes:
            raise error(source, "is not a known scene_id", line=line, field="scene_id",
                        value=scene)
        if experience not in experiences:
            raise error(source, "is not a known experience_id of the library", line=line,
                        field="experience_id", value=experience)
        present.add(scene if selection else (scene, experience))
    if selection:
        missing = [s for s in ids.scene_ids if s not in present]
        if missing:
            raise error(source, f"has no selection; a selection-only table needs one row per "
                        f"scene ({len(missing)} scenes missing)", field="scene_id",
                        value=missing[0])
        return True
    missing_pairs = [(s, e) for s in ids.scene_ids for e in ids.experience_ids
                     if (s, e) not in present]
    if missing_pairs:
        raise error(source, f"has no score; every experience needs a score in every scene "
                    f"({len(missing_pairs)} pairs missing)", field="scene_id, experience_id",
                    value=", ".join(missing_pairs[0]))
    return True
