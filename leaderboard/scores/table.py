"""The scores table of one setting, validated: columns, ids, one score (or pick) per pair.

`parse_scores_table` checks a parsed table (any format: CSV text cells,
Parquet columns, JSON values) against a library and a query set; every
problem is an `InputError` naming the source, line (header = line 1), field
and value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from leaderboard.io_cells import Cells
from leaderboard.scores.fast import fast_score_frame

SELECTION_COLUMNS = ("scene_id", "experience_id")
SCORE_COLUMNS = SELECTION_COLUMNS + ("score",)


@dataclass(frozen=True)
class ScoresInput:
    """A validated score table: `scores` (K, Q) in library x scene order.

    For a selection-only submission the scores are 1 for the pick and 0
    elsewhere and `selection_only` is True.
    """

    scores: np.ndarray
    selection_only: bool


@dataclass(frozen=True)
class SettingScores:
    """The validated scores of one setting of an upload (or of a selector's run)."""

    setting_id: str
    scores: np.ndarray
    selection_only: bool


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
    cells.check_columns(SELECTION_COLUMNS, ("score",))  # without `score`: a selection
    scn = cells.index_of("scene_id", scene_ids, "scene_id")
    exp = cells.index_of("experience_id", experience_ids, "experience_id of the library")
    if selection_only:
        shape = (len(experience_ids), len(scene_ids))
        return ScoresInput(_selection_scores(cells, exp, scn, shape, scene_ids), True)
    return ScoresInput(_full_scores(cells, exp, scn, experience_ids, scene_ids), False)
