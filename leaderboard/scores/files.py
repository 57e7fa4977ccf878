"""A scores file on disk (CSV or Parquet), and the four input files of `expaudit audit`.

Large well-formed files are read as columns (`leaderboard.scores.fast`);
anything else goes through the strict reader (`leaderboard.io_cells.read_table`
and `leaderboard.scores.table.parse_scores_table`), which gives the same
matrix or names the first bad cell.
"""

from __future__ import annotations

from pathlib import Path

from leaderboard.io import read_transfer
from leaderboard.io_cells import read_table
from leaderboard.matrix import TransferData
from leaderboard.scores.fast import fast_scores
from leaderboard.scores.table import ScoresInput, parse_scores_table


def read_scores_file(path: str | Path, experience_ids, scene_ids) -> ScoresInput:
    """The validated scores (K, Q) of the file at `path`, for the library and scenes given."""
    experience_ids, scene_ids = tuple(experience_ids), tuple(scene_ids)
    matrix = fast_scores(path, experience_ids, scene_ids)  # None: not the simple case
    if matrix is not None:
        return ScoresInput(matrix, False)
    return parse_scores_table(read_table(path), experience_ids, scene_ids, source=str(path))


def read_inputs(experiences: str | Path, outcomes: str | Path, scenes: str | Path,
                scores: str | Path) -> tuple[TransferData, ScoresInput]:
    """Read and cross-check the four input files of `expaudit audit`."""
    data = read_transfer(experiences, outcomes, scenes)
    return data, read_scores_file(scores, data.experience_ids, data.scenes.scene_ids)
