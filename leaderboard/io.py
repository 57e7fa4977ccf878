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

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.io_cells import FIRST_DATA_LINE, Cells, read_table
from leaderboard.matrix import MISSING, SceneTable, TransferData
from leaderboard.outcomes_fast import fast_outcomes
from leaderboard.scores_fast import fast_score_frame, fast_scores

EXPERIENCE_COLUMNS = ("experience_id",)
SCENE_COLUMNS = ("scene_id", "state_id", "layout_level", "appearance_draw")
OUTCOME_COLUMNS = ("experience_id", "scene_id", "seed", "success")
SELECTION_COLUMNS = ("scene_id", "experience_id")
SCORE_COLUMNS = SELECTION_COLUMNS + ("score",)
LAYOUT_LEVELS = (0, 1, 2, 3)

__all__ = [
    "ScoresInput",
    "parse_experiences",
    "parse_scenes",
    "parse_outcomes",
    "parse_scores_table",
    "read_inputs",
    "read_table",
]


@dataclass(frozen=True)
class ScoresInput:
    """A validated score table: `scores` (K, Q) in library x scene order.

    For a selection-only submission the scores are 1 for the pick and 0
    elsewhere and `selection_only` is True.
    """

    scores: np.ndarray
    selection_only: bool


def parse_experiences(frame: pd.DataFrame, *, source: str) -> tuple[str, ...]:
    """Library order from the experiences table."""
    cells = Cells(frame, source)
    cells.check_columns(EXPERIENCE_COLUMNS)
    ids = cells.ids("experience_id")
    cells.unique(ids, "experience_id", "experience_id")
    return tuple(ids)


def _check_state_layouts(cells: Cells, states: list[str], layout: list[int], draws: list[int]) -> None:
    """All renders of one state share its layout; each (state, draw) is one scene."""
    layout_of: dict[str, tuple[int, int]] = {}
    for position, (state, level) in enumerate(zip(states, layout)):
        first_level, first_position = layout_of.setdefault(state, (level, position))
        if first_level != level:
            raise cells.error(
                f"disagrees with layout_level {first_level} of state '{state}' on line "
                f"{first_position + FIRST_DATA_LINE}: all renders of one state share one layout",
                position,
                "layout_level",
                level,
            )
    cells.unique(list(zip(states, draws)), "state_id, appearance_draw", "(state_id, appearance_draw)")


def parse_scenes(frame: pd.DataFrame, *, source: str) -> SceneTable:
    """Scene table in published order; checks layout levels and per-state consistency."""
    cells = Cells(frame, source)
    cells.check_columns(SCENE_COLUMNS)
    scene_ids = cells.ids("scene_id")
    cells.unique(scene_ids, "scene_id", "scene_id")
    states = cells.ids("state_id")
    layout = cells.integers("layout_level")
    draws = cells.integers("appearance_draw")
    for position, level in enumerate(layout):
        if level not in LAYOUT_LEVELS:
            raise cells.error("is not a layout level (0, 1, 2 or 3)", position, "layout_level", level)
    for position, draw in enumerate(draws):
        if draw < 0:
            raise cells.error("is negative (0 = nominal appearance)", position, "appearance_draw", draw)
    _check_state_layouts(cells, states, layout, draws)
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
    cells = Cells(frame, source)
    cells.check_columns(OUTCOME_COLUMNS)
    exp = cells.index_of("experience_id", experience_ids, "experience_id (not in the experiences file)")
    scn = cells.index_of("scene_id", scene_ids, "scene_id (not in the scenes file)")
    seeds = cells.integers("seed")
    success = cells.binary("success")
    keys = list(zip((experience_ids[i] for i in exp), (scene_ids[j] for j in scn), seeds))
    cells.unique(keys, "experience_id, scene_id, seed", "(experience_id, scene_id, seed)")
    seed_values = sorted(set(seeds))
    seed_index = {s: n for n, s in enumerate(seed_values)}
    outcomes = np.full((len(experience_ids), len(scene_ids), len(seed_values)), MISSING, dtype=np.int8)
    outcomes[exp, scn, [seed_index[s] for s in seeds]] = success
    missing = np.argwhere(outcomes == MISSING)
    if len(missing):
        i, q, s = missing[0]
        raise cells.error(
            f"has no row; every experience needs an outcome in every scene for each of the "
            f"seeds {seed_values} ({len(missing)} rows missing in all)",
            field="experience_id, scene_id, seed",
            value=f"{experience_ids[i]}, {scene_ids[q]}, {seed_values[s]}",
        )
    return outcomes


def _selection_scores(
    cells: Cells, exp: np.ndarray, scn: np.ndarray, shape: tuple[int, int], scene_ids: tuple[str, ...]
) -> np.ndarray:
    """One pick per scene -> scores 1 for the pick, 0 elsewhere."""
    cells.unique([scene_ids[j] for j in scn], "scene_id", "selection of scene")
    present = np.zeros(shape[1], dtype=bool)
    present[scn] = True
    if not present.all():
        raise cells.error(
            f"has no selection; a selection-only table needs one row per scene "
            f"({int((~present).sum())} scenes missing)",
            field="scene_id",
            value=scene_ids[int(np.flatnonzero(~present)[0])],
        )
    scores = np.zeros(shape)
    scores[exp, scn] = 1.0
    return scores


def _full_scores(
    cells: Cells,
    exp: np.ndarray,
    scn: np.ndarray,
    experience_ids: tuple[str, ...],
    scene_ids: tuple[str, ...],
) -> np.ndarray:
    """One finite score per (scene, experience) pair."""
    values = cells.finite("score")
    cells.unique(
        [(scene_ids[j], experience_ids[i]) for j, i in zip(scn, exp)],
        "scene_id, experience_id",
        "(scene_id, experience_id)",
    )
    present = np.zeros((len(experience_ids), len(scene_ids)), dtype=bool)
    present[exp, scn] = True
    if not present.all():
        i, q = np.argwhere(~present)[0]
        raise cells.error(
            f"has no score; every experience needs a score in every scene ({int((~present).sum())} pairs missing)",
            field="scene_id, experience_id",
            value=f"{scene_ids[q]}, {experience_ids[i]}",
        )
    scores = np.zeros(present.shape)
    scores[exp, scn] = values
    return scores


def parse_scores_table(frame: pd.DataFrame, experience_ids, scene_ids, *, source: str) -> ScoresInput:
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
    matrix = fast_score_frame(frame, experience_ids, scene_ids)  # None: not the simple case
    if matrix is not None:
        return ScoresInput(matrix, False)
    cells = Cells(frame, source)
    selection_only = "score" not in [str(c) for c in frame.columns]
    cells.check_columns(SELECTION_COLUMNS, () if selection_only else ("score",))
    scn = cells.index_of("scene_id", scene_ids, "scene_id")
    exp = cells.index_of("experience_id", experience_ids, "experience_id of the library")
    if selection_only:
        shape = (len(experience_ids), len(scene_ids))
        return ScoresInput(_selection_scores(cells, exp, scn, shape, scene_ids), True)
    return ScoresInput(_full_scores(cells, exp, scn, experience_ids, scene_ids), False)


def read_inputs(
    experiences: str | Path, outcomes: str | Path, scenes: str | Path, scores: str | Path
) -> tuple[TransferData, ScoresInput]:
    """Read and cross-check the four input files of `expaudit audit`."""
    experience_ids = parse_experiences(read_table(experiences), source=str(experiences))
    scene_table = parse_scenes(read_table(scenes), source=str(scenes))
    tensor = fast_outcomes(outcomes, experience_ids, scene_table.scene_ids)  # None: not the simple case
    if tensor is None:
        tensor = parse_outcomes(read_table(outcomes), experience_ids, scene_table.scene_ids, source=str(outcomes))
    matrix = fast_scores(scores, experience_ids, scene_table.scene_ids)  # None: not the simple case
    if matrix is not None:
        return TransferData(experience_ids, scene_table, tensor), ScoresInput(matrix, False)
    submitted = parse_scores_table(
        read_table(scores), experience_ids, scene_table.scene_ids, source=str(scores)
    )
    return TransferData(experience_ids, scene_table, tensor), submitted
