"""Read the audit's input tables (CSV or Parquet) into `TransferData` and a score matrix.

Files (column names exact; row order matters where stated):

- experiences: `experience_id`; row order is library order (first = oldest).
- scenes: `scene_id,state_id,layout_level,appearance_draw`; row order is the
  published scene order (the order `track_record` visits them).
- outcomes: `experience_id,scene_id,seed,success`; one row per
  (experience, scene, seed), success 0 or 1, the same seeds everywhere.
- scores: read by `leaderboard.scores` (the one reader of scores, also for
  the web service's uploads and a selector's output), whose `read_inputs`
  reads all four files.

Every problem raises `InputError` naming the file, line (header = line 1),
field and value; nothing is dropped or coerced silently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.io_cells import FIRST_DATA_LINE, Cells, read_table
from leaderboard.matrix import MISSING, SceneTable, TransferData
from leaderboard.outcomes_fast import fast_outcomes

EXPERIENCE_COLUMNS = ("experience_id",)
SCENE_COLUMNS = ("scene_id", "state_id", "layout_level", "appearance_draw")
OUTCOME_COLUMNS = ("experience_id", "scene_id", "seed", "success")
LAYOUT_LEVELS = (0, 1, 2, 3)

__all__ = [
    "parse_experiences",
    "parse_scenes",
    "parse_outcomes",
    "read_transfer",
    "read_table",
]


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


def read_transfer(experiences: str | Path, outcomes: str | Path, scenes: str | Path) -> TransferData:
    """Read and cross-check the experiences, scenes and outcomes files of `expaudit audit`."""
    experience_ids = parse_experiences(read_table(experiences), source=str(experiences))
    scene_table = parse_scenes(read_table(scenes), source=str(scenes))
    tensor = fast_outcomes(outcomes, experience_ids, scene_table.scene_ids)  # None: not the simple case
    if tensor is None:
        tensor = parse_outcomes(read_table(outcomes), experience_ids, scene_table.scene_ids, source=str(outcomes))
    return TransferData(experience_ids, scene_table, tensor)
