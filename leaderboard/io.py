"""Read the audit's input tables (CSV or Parquet) into `TransferData` and a score matrix.

Files (column names exact; row order matters where stated):

- experiences: `experience_id`; row order is library order (first = oldest).
- scenes: `scene_id,state_id,layout_level,appearance_draw`; row order is the
  published scene order (the order `track_record` visits them).
- outcomes: `experience_id,scene_id,seed,success`; one row per
  (experience, scene, seed), success 0 or 1, the same seeds everywhere.
- scores: `scene_id,experience_id,score` (one row per pair), or
  `scene_id,experience_id` alone (a selection-only submission: one row per scene).

Every problem raises `InputError` naming the file, line (header = line 1),
field and value; nothing is dropped or coerced silently. `parse_scores_table`
is the same validation for an already parsed table (the web service's uploads).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.matrix import SceneTable, TransferData

EXPERIENCE_COLUMNS = ("experience_id",)
SCENE_COLUMNS = ("scene_id", "state_id", "layout_level", "appearance_draw")
OUTCOME_COLUMNS = ("experience_id", "scene_id", "seed", "success")
SCORE_COLUMNS = ("scene_id", "experience_id", "score")
SELECTION_COLUMNS = ("scene_id", "experience_id")
LAYOUT_LEVELS = (0, 1, 2, 3)
FIRST_DATA_LINE = 2
"""Line number of the first data row: line 1 is the header."""


@dataclass(frozen=True)
class ScoresInput:
    """A validated score table: `scores` (K, Q) in library x scene order.

    For a selection-only submission the scores are 1 for the pick and 0
    elsewhere and `selection_only` is True.
    """

    scores: np.ndarray
    selection_only: bool


# ---------------------------------------------------------------- reading files


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV (every cell as text) or Parquet file; errors name the file."""
    source = str(path)
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise InputError(source, f"unsupported file type '{suffix}': use .csv or .parquet")
    if not Path(path).is_file():
        raise InputError(source, "file not found")
    if suffix == ".csv":
        return _read_csv(Path(path), source)
    try:
        frame = pd.read_parquet(path)
    except (ValueError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(source, f"cannot be read: {first_line}") from exc
    return frame.reset_index(drop=True)


def _read_csv(path: Path, source: str) -> pd.DataFrame:
    """Read a CSV with the standard library so that every row keeps its true line number.

    Rows with more or fewer fields than the header, blank lines and quoted
    fields spanning several lines are errors (pandas would silently shift
    a long first row into an index, skip blank lines, or renumber lines).
    """
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise InputError(source, "file is empty (no header line)")
            rows = []
            for row in reader:
                line = len(rows) + FIRST_DATA_LINE
                if reader.line_num != line:
                    raise InputError(source, "a quoted field spans several lines; every row must be one line", line=line)
                if not row:
                    raise InputError(source, "is a blank line; remove it", line=line)
                if len(row) != len(header):
                    raise InputError(
                        source, f"has {len(row)} fields, the header has {len(header)}", line=line,
                    )
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise InputError(source, f"is not UTF-8 text (bad byte at offset {exc.start})") from None
    except csv.Error as exc:
        raise InputError(source, f"cannot be read: {exc}") from exc
    return pd.DataFrame(rows, columns=header, dtype=object)


# ---------------------------------------------------------------- cell parsing


def _line(position: int) -> int:
    return position + FIRST_DATA_LINE


def _text(value: object) -> str:
    """A cell as text: missing -> "", floats as Python writes them ("nan", "1.0")."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    return str(value)


def _column_text(frame: pd.DataFrame, column: str) -> list[str]:
    return [_text(v) for v in frame[column].tolist()]


def _check_columns(frame: pd.DataFrame, required: tuple[str, ...], source: str, optional: tuple[str, ...] = ()) -> None:
    """Every required column present, none unexpected (extra data is never ignored)."""
    names = [str(c) for c in frame.columns]
    for column in required:
        if column not in names:
            raise InputError(source, f"missing column (expected columns: {', '.join(required + optional)})", field=column)
    for column in names:
        if column not in required + optional:
            raise InputError(source, f"is not a known column (expected: {', '.join(required + optional)})", field="header", value=column)
    if len(set(names)) != len(names):
        raise InputError(source, "has a repeated column name", field="header")


def _ids(frame: pd.DataFrame, column: str, source: str) -> list[str]:
    values = _column_text(frame, column)
    for position, value in enumerate(values):
        if value == "":
            raise InputError(source, "is empty", line=_line(position), field=column, value=value)
    return values


def _number(text: str, source: str, position: int, column: str) -> float:
    if text.strip() == "":
        raise InputError(source, "is empty", line=_line(position), field=column, value=text)
    try:
        return float(text)
    except ValueError:
        raise InputError(source, "is not a number", line=_line(position), field=column, value=text) from None


def _integers(frame: pd.DataFrame, column: str, source: str) -> list[int]:
    out = []
    for position, text in enumerate(_column_text(frame, column)):
        number = _number(text, source, position, column)
        if not math.isfinite(number) or not number.is_integer():
            raise InputError(source, "is not an integer", line=_line(position), field=column, value=text)
        out.append(int(number))
    return out


def _finite(frame: pd.DataFrame, column: str, source: str) -> list[float]:
    out = []
    for position, text in enumerate(_column_text(frame, column)):
        number = _number(text, source, position, column)
        if not math.isfinite(number):
            raise InputError(source, "is not a finite number", line=_line(position), field=column, value=text)
        out.append(number)
    return out


def _binary(frame: pd.DataFrame, column: str, source: str) -> list[int]:
    out = []
    for position, text in enumerate(_column_text(frame, column)):
        number = _number(text, source, position, column)
        if number not in (0.0, 1.0):
            raise InputError(source, "is not a binary outcome (0 or 1)", line=_line(position), field=column, value=text)
        out.append(int(number))
    return out


def _index_of(values: list[str], known: dict[str, int], source: str, column: str, what: str) -> np.ndarray:
    out = np.empty(len(values), dtype=np.int64)
    for position, value in enumerate(values):
        if value not in known:
            raise InputError(source, f"is not a known {what}", line=_line(position), field=column, value=value)
        out[position] = known[value]
    return out


def _unique(values: list, source: str, field: str, what: str) -> None:
    """Raise on the first repeated value, naming both lines."""
    first: dict = {}
    for position, value in enumerate(values):
        if value in first:
            raise InputError(
                source, f"repeats the {what} of line {_line(first[value])}",
                line=_line(position), field=field, value=value if not isinstance(value, tuple) else ", ".join(map(str, value)),
            )
        first[value] = position


def _non_empty(frame: pd.DataFrame, source: str) -> None:
    if len(frame) == 0:
        raise InputError(source, "has no data rows")


# ---------------------------------------------------------------- the tables


def parse_experiences(frame: pd.DataFrame, *, source: str) -> tuple[str, ...]:
    """Library order from the experiences table."""
    _check_columns(frame, EXPERIENCE_COLUMNS, source)
    _non_empty(frame, source)
    ids = _ids(frame, "experience_id", source)
    _unique(ids, source, "experience_id", "experience_id")
    return tuple(ids)


def _check_state_layouts(states: list[str], layout: list[int], draws: list[int], source: str) -> None:
    """All renders of one state share its layout; each (state, draw) is one scene."""
    layout_of: dict[str, tuple[int, int]] = {}
    for position, (state, level) in enumerate(zip(states, layout)):
        if state in layout_of and layout_of[state][0] != level:
            first_level, first_position = layout_of[state]
            raise InputError(
                source,
                f"disagrees with layout_level {first_level} of state '{state}' on line "
                f"{_line(first_position)}: all renders of one state share one layout",
                line=_line(position), field="layout_level", value=level,
            )
        layout_of.setdefault(state, (level, position))
    _unique(list(zip(states, draws)), source, "state_id, appearance_draw", "(state_id, appearance_draw)")


def parse_scenes(frame: pd.DataFrame, *, source: str) -> SceneTable:
    """Scene table in published order; checks layout levels and per-state consistency."""
    _check_columns(frame, SCENE_COLUMNS, source)
    _non_empty(frame, source)
    scene_ids = _ids(frame, "scene_id", source)
    _unique(scene_ids, source, "scene_id", "scene_id")
    states = _ids(frame, "state_id", source)
    layout = _integers(frame, "layout_level", source)
    draws = _integers(frame, "appearance_draw", source)
    for position, level in enumerate(layout):
        if level not in LAYOUT_LEVELS:
            raise InputError(source, "is not a layout level (0, 1, 2 or 3)", line=_line(position), field="layout_level", value=level)
    for position, draw in enumerate(draws):
        if draw < 0:
            raise InputError(source, "is negative (0 = nominal appearance)", line=_line(position), field="appearance_draw", value=draw)
    _check_state_layouts(states, layout, draws, source)
    return SceneTable(
        scene_ids=tuple(scene_ids),
        state_ids=np.array(states, dtype=object),
        layout_level=np.array(layout, dtype=np.int64),
        appearance_draw=np.array(draws, dtype=np.int64),
    )


def parse_outcomes(
    frame: pd.DataFrame, experience_ids: tuple[str, ...], scene_ids: tuple[str, ...], *, source: str
) -> np.ndarray:
    """Outcome tensor (K, Q, S) int8; seeds sorted ascending, the same for every pair."""
    _check_columns(frame, OUTCOME_COLUMNS, source)
    _non_empty(frame, source)
    exp = _index_of(_ids(frame, "experience_id", source), {e: i for i, e in enumerate(experience_ids)}, source, "experience_id", "experience_id (not in the experiences file)")
    scn = _index_of(_ids(frame, "scene_id", source), {s: i for i, s in enumerate(scene_ids)}, source, "scene_id", "scene_id (not in the scenes file)")
    seeds = _integers(frame, "seed", source)
    success = _binary(frame, "success", source)
    keys = list(zip((experience_ids[i] for i in exp), (scene_ids[j] for j in scn), seeds))
    _unique(keys, source, "experience_id, scene_id, seed", "(experience_id, scene_id, seed)")
    seed_values = sorted(set(seeds))
    seed_index = {s: n for n, s in enumerate(seed_values)}
    outcomes = np.full((len(experience_ids), len(scene_ids), len(seed_values)), -1, dtype=np.int8)
    outcomes[exp, scn, [seed_index[s] for s in seeds]] = success
    missing = np.argwhere(outcomes < 0)
    if len(missing):
        i, q, s = missing[0]
        raise InputError(
            source,
            f"has no row; every experience needs an outcome in every scene for each of the "
            f"seeds {seed_values} ({len(missing)} rows missing in all)",
            field="experience_id, scene_id, seed",
            value=f"{experience_ids[i]}, {scene_ids[q]}, {seed_values[s]}",
        )
    return outcomes


def parse_scores_table(
    frame: pd.DataFrame, experience_ids, scene_ids, *, source: str
) -> ScoresInput:
    """Validate a submitted score (or selection) table against a library and query set.

    Parameters
    ----------
    frame : columns `scene_id,experience_id,score`, or `scene_id,experience_id`
        for a selection-only submission.
    experience_ids, scene_ids : the library and the scenes, in order.
    source : file name or "upload", used in error messages.

    Returns
    -------
    ScoresInput with scores of shape (K, Q).
    """
    experience_ids, scene_ids = tuple(experience_ids), tuple(scene_ids)
    selection_only = "score" not in [str(c) for c in frame.columns]
    _check_columns(frame, SELECTION_COLUMNS, source, () if selection_only else ("score",))
    _non_empty(frame, source)
    scn = _index_of(_ids(frame, "scene_id", source), {s: i for i, s in enumerate(scene_ids)}, source, "scene_id", "scene_id")
    exp = _index_of(_ids(frame, "experience_id", source), {e: i for i, e in enumerate(experience_ids)}, source, "experience_id", "experience_id of the library")
    scores = np.zeros((len(experience_ids), len(scene_ids)))
    if selection_only:
        _unique([scene_ids[j] for j in scn], source, "scene_id", "selection of scene")
        scores[exp, scn] = 1.0
        present = np.zeros(len(scene_ids), dtype=bool)
        present[scn] = True
        if not present.all():
            missing = int(np.flatnonzero(~present)[0])
            raise InputError(source, f"has no selection; a selection-only table needs one row per scene ({int((~present).sum())} scenes missing)", field="scene_id", value=scene_ids[missing])
        return ScoresInput(scores, True)
    values = _finite(frame, "score", source)
    _unique([(scene_ids[j], experience_ids[i]) for j, i in zip(scn, exp)], source, "scene_id, experience_id", "(scene_id, experience_id)")
    present = np.zeros(scores.shape, dtype=bool)
    scores[exp, scn] = values
    present[exp, scn] = True
    if not present.all():
        i, q = np.argwhere(~present)[0]
        raise InputError(source, f"has no score; every experience needs a score in every scene ({int((~present).sum())} pairs missing)", field="scene_id, experience_id", value=f"{scene_ids[q]}, {experience_ids[i]}")
    return ScoresInput(scores, False)


def read_inputs(experiences, outcomes, scenes, scores) -> tuple[TransferData, ScoresInput]:
    """Read and cross-check the four input files of `expaudit audit`."""
    experience_ids = parse_experiences(read_table(experiences), source=str(experiences))
    scene_table = parse_scenes(read_table(scenes), source=str(scenes))
    tensor = parse_outcomes(read_table(outcomes), experience_ids, scene_table.scene_ids, source=str(outcomes))
    submitted = parse_scores_table(read_table(scores), experience_ids, scene_table.scene_ids, source=str(scores))
    return TransferData(experience_ids, scene_table, tensor), submitted
