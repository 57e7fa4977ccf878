"""Version 2 of the Door query sets (issue 38): the corrected states beside the published ones,
and the cells of the states that changed.

`write_revision` writes each Door query set's scenes at the generator's version into the
revision root (`REVISION_ROOT`; every state checked by `door_scene_rows`), after checking that
only level-2 states changed and in them only the articulation. `revised_state_ids` names the
states whose initial state differs from the published version; `plan_revised_cells` lists the
cells of those states for the four Door policy settings, seed-major, run by the published
policies (`rollouts.run_cells(..., policies_root=...)`). Republishing is a later step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pandas as pd

from benchmark_data.downloads import data_version
from benchmark_data.generation.query_set_build import door_scene_rows
from benchmark_data.paths import REVISION_ROOT
from benchmark_data.query_sets import VERSION_COLUMN, read_scenes, scenes_version, write_scenes
from benchmark_data.registry import N_SEEDS, get_setting
from expaudit.errors import InternalError
from simulator.door_scenes import QUERY_SET_VERSION
from simulator.executor import Cell

DOOR_QUERY_SETS = ("door-orig", "door-fresh")
DOOR_POLICY_SETTINGS = ("door-policy-k3-orig", "door-policy-k3-fresh",
                        "door-policydr-k3-orig", "door-policydr-k3-fresh")
"""The published settings whose cells run on the Door query sets."""
ARTICULATION_COLUMNS = ("layout", "hinge", "latch", "handle_x", "handle_y", "handle_z", "state_hash",
                        VERSION_COLUMN)
"""Columns a revision may change in a revised state: the articulation and what follows from it."""
REVISED_LEVEL = 2
"""The layout level whose states a revision may change (the ajar door)."""


class RevisionChangesTooMuch(InternalError, ValueError):
    """A revised query set that differs from the published one in more than the level-2 states'
    articulation (a scene, a state id, a door pose, an obstacle or another level)."""


def _revised(old: pd.DataFrame, new: pd.DataFrame, query_set: str) -> list[str]:
    """State ids whose initial state differs between two versions of one query set's scenes;
    raises `RevisionChangesTooMuch` for any other difference."""
    if list(old.scene_id) != list(new.scene_id) or list(old.state_id) != list(new.state_id):
        raise RevisionChangesTooMuch(f"{query_set}: scene_id/state_id differ between the versions")
    changed = sorted(set(old.state_id[old.state_hash.values != new.state_hash.values]))
    kept = ~old.state_id.isin(changed).values
    for column in old.columns:
        if column == VERSION_COLUMN:
            continue
        a, b = old[column].to_numpy(), new[column].to_numpy()
        differs = ~((a == b) | (pd.isna(a) & pd.isna(b)))
        if differs[kept].any() or (column not in ARTICULATION_COLUMNS and differs.any()):
            row = int(differs.argmax())
            raise RevisionChangesTooMuch(f"{query_set}: column {column!r} differs at scene "
                                         f"{old.scene_id.iloc[row]!r}")
    for state_id in changed:
        level = int(old.layout_level[old.state_id == state_id].iloc[0])
        a = json.loads(old.layout[old.state_id == state_id].iloc[0])
        b = json.loads(new.layout[new.state_id == state_id].iloc[0])
        if level != REVISED_LEVEL or a["door"] != b["door"] or a["obstacle"] != b["obstacle"]:
            raise RevisionChangesTooMuch(f"{query_set}: state {state_id!r} (level {level}) changes "
                                         f"more than its articulation")
    return changed


def write_revision(sim, root=REVISION_ROOT, published_root=None, version: int = QUERY_SET_VERSION) -> dict:
    """Write the Door query sets' scenes at `version` into `root` and `root/revision.json` (the
    version, the data version it revises, the changed states); returns that record. `sim` (a
    DoorSim) checks every state: an invalid one raises `InvalidState` and nothing is written."""
    record = {"query_set_version": version, "revises_data_version": data_version(), "changed": {}}
    frames = {}
    for query_set in DOOR_QUERY_SETS:
        new = pd.DataFrame(door_scene_rows(query_set, sim, version))
        record["changed"][query_set] = _revised(read_scenes(query_set, published_root), new, query_set)
        frames[query_set] = new
    for query_set, frame in frames.items():
        write_scenes(query_set, frame.to_dict("records"), root)
    root = REVISION_ROOT if root is None else root
    (root / "revision.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def revised_state_ids(query_set: str, root=REVISION_ROOT, published_root=None) -> list[str]:
    """The states of `query_set` whose revised version (under `root`) differs from the published
    one, checked as `write_revision` checks them."""
    new = read_scenes(query_set, root)
    if scenes_version(new) == scenes_version(read_scenes(query_set, published_root)):
        return []
    return _revised(read_scenes(query_set, published_root), new, query_set)


def plan_revised_cells(seeds: Iterable[int] = range(N_SEEDS), settings=DOOR_POLICY_SETTINGS,
                       root=REVISION_ROOT, published_root=None) -> list[Cell]:
    """The cells of the revised states' scenes for `settings`, seed-major (every seed of every
    setting completes in turn): 10 states x 5 draws x 3 experiences per seed and setting."""
    scenes = {}
    for query_set in {get_setting(s).query_set for s in settings}:
        changed = set(revised_state_ids(query_set, root, published_root))
        frame = read_scenes(query_set, root)
        scenes[query_set] = list(frame.scene_id[frame.state_id.isin(changed)])
    cells = []
    for seed in seeds:
        for setting_id in settings:
            setting = get_setting(setting_id)
            cells += [Cell(setting.mechanism.value, setting.query_set, eid, sid, seed)
                      for eid in setting.experience_ids for sid in scenes[setting.query_set]]
    return cells
