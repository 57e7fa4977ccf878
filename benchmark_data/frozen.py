"""Loaders of the frozen benchmark data: transfer tensors, completeness and own-base success.

A setting's tensor is assembled from the stored cells of its (mechanism, query
set): camera-blind cells (Replay) are stored once per physical state and label
every appearance draw of that state. Cells never executed are `MISSING`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark_data.cells import load_cells
from benchmark_data.library import LibraryNotFoundError, read_experiences
from benchmark_data.paths import BASE_QUERY_SET
from benchmark_data.query_sets import QuerySetNotFoundError, read_scenes
from benchmark_data.registry import N_SEEDS, Mechanism, get_setting
from leaderboard.matrix import MISSING, SceneTable, TransferData

__all__ = ["load_transfer", "completeness", "own_base_success", "LibraryNotFoundError",
           "QuerySetNotFoundError"]


def _scene_table(scenes: pd.DataFrame) -> SceneTable:
    return SceneTable(scene_ids=tuple(scenes["scene_id"]),
                      state_ids=scenes["state_id"].to_numpy(),
                      layout_level=scenes["layout_level"].to_numpy(dtype=np.int64),
                      appearance_draw=scenes["appearance_draw"].to_numpy(dtype=np.int64))


def load_transfer(setting_id: str, root=None, computed=None, library_root=None) -> TransferData:
    """The outcome tensor of a setting (K x Q x 5), `MISSING` where no cell is stored.

    Cells are those of the frozen root `root` and, when given, of the computed-cells
    directory `computed` (`benchmark_data.cells.load_cells`); the library is read from
    `library_root` when given (an earlier data version's kept files hold no library).

    Raises `UnknownSettingError` for an unknown id, and `LibraryNotFoundError` or
    `QuerySetNotFoundError` when the library or query set files are absent.
    """
    setting = get_setting(setting_id)
    scenes = read_scenes(setting.query_set, root)
    library = read_experiences(setting.library_id, root if library_root is None else library_root)
    known = set(library["experience_id"])
    absent = [e for e in setting.experience_ids if e not in known]
    if absent:
        raise LibraryNotFoundError(
            f"setting {setting_id!r}: experiences {absent[:3]} are not in library "
            f"{setting.library_id!r} ({len(known)} experiences)")
    exp_index = {e: i for i, e in enumerate(setting.experience_ids)}
    outcomes = np.full((setting.k, len(scenes), N_SEEDS), MISSING, dtype=np.int8)
    cells = load_cells(setting.mechanism.value, setting.query_set, root, computed)
    cells = cells[cells["experience_id"].isin(exp_index)]
    if len(cells):
        rows = cells["experience_id"].map(exp_index).to_numpy()
        seeds = cells["seed"].to_numpy(dtype=np.int64)
        success = cells["success"].to_numpy(dtype=np.int8)
        if setting.mechanism.camera_blind:
            _fill_by_state(outcomes, scenes, cells["state_id"].to_numpy(), rows, seeds, success)
        else:
            col = pd.Index(scenes["scene_id"]).get_indexer(cells["state_id"])
            keep = col >= 0
            outcomes[rows[keep], col[keep], seeds[keep]] = success[keep]
    return TransferData(experience_ids=setting.experience_ids, scenes=_scene_table(scenes),
                        outcomes=outcomes)


def _fill_by_state(outcomes, scenes, state_ids, rows, seeds, success) -> None:
    """Copy each per-state outcome to every scene (appearance draw) of that state."""
    by_state: dict[str, list[int]] = {}
    for q, sid in enumerate(scenes["state_id"]):
        by_state.setdefault(sid, []).append(q)
    for r, sid, s, y in zip(rows, state_ids, seeds, success):
        for q in by_state.get(sid, ()):
            outcomes[r, q, s] = y


def completeness(setting_id: str, root=None) -> tuple[int, int]:
    """(cells done, cells total) of a setting, counted over its K x Q x S tensor."""
    data = load_transfer(setting_id, root)
    total = int(data.outcomes.size)
    return total - data.n_missing, total


def own_base_success(library_id: str, root=None) -> dict[str, float]:
    """experience_id -> Replay success in its own base scene (mean over stored seeds)."""
    task = library_id.split("-")[0]
    cells = load_cells(Mechanism.REPLAY.value, BASE_QUERY_SET[task], root)
    if not len(cells):
        return {}
    return cells.groupby("experience_id")["success"].mean().astype(float).to_dict()
