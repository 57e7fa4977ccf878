"""Version 2 of the Door query sets (issue 38): the corrected states beside the published ones,
and the cells of the states that changed.

`write_revision` writes each Door query set's scenes at the generator's version into the
revision root (`REVISION_ROOT`; every state checked by `door_scene_rows`), after checking that
only level-2 states changed and in them only the articulation. `revised_state_ids` names the
states whose initial state differs from the published version; `plan_revised_cells` lists the
cells of those states for the four Door policy settings, seed-major, run by the published
policies (`rollouts.run_cells(..., policies_root=...)`). `publish` republishes: it keeps the
published version's Door files under `versions/<data version>/` of the published root, puts
the revised scenes (and their re-rendered images) and cells in their place, re-exports the
Door encoder features and rewrites the manifest.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from benchmark_data.cells import KEY_COLUMNS, load_cells
from benchmark_data.downloads import data_version
from benchmark_data.generation.query_set_build import door_scene_rows
from benchmark_data.generation.images import _add_png, _layout
from simulator.appearance import encode_png, sample_draw
from benchmark_data.generation.export import write_manifest
from benchmark_data.image_archive import iter_pngs, member_name, query_images_path
from benchmark_data.paths import REVISION_ROOT, cells_table, query_set_dir, root_or_default
from benchmark_data.policy_files import encoder_features_path
from benchmark_data.query_sets import VERSION_COLUMN, read_scenes, scenes_version, write_scenes
from benchmark_data.registry import N_SEEDS, get_setting
from benchmark_data.versions import DATA_VERSION, VERSION_RECORD, version_root
from expaudit.errors import InternalError, InvalidInput
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
    """The states of `query_set` whose revised version (under `root`) differs from the version
    it revises (published, or kept once published), checked as `write_revision` checks them."""
    new = read_scenes(query_set, root)
    old = _revised_from(query_set, root, published_root)
    return [] if old is None else _revised(old, new, query_set)


def _revised_from(query_set: str, root, published_root) -> pd.DataFrame | None:
    """The scenes the revision under `root` revises: the published ones while they are of an
    earlier version, the kept earlier version's once the revision is published; None when
    there is nothing to compare (no revision of this set)."""
    published = read_scenes(query_set, published_root)
    if scenes_version(read_scenes(query_set, root)) != scenes_version(published):
        return published
    record = json.loads((Path(REVISION_ROOT if root is None else root) / "revision.json").read_text())
    kept = version_root(record["revises_data_version"], published_root)
    return read_scenes(query_set, kept) if (kept / VERSION_RECORD).exists() else None


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


class RevisionNotReady(InvalidInput):
    """A revision that cannot be published yet: cells of changed states not stored, or the
    code's data version not bumped past the version it revises."""


def _door_files() -> list[str]:
    """The published files a Door revision replaces, relative to the frozen root."""
    files = []
    for query_set in DOOR_QUERY_SETS:
        files += [f"query_sets/{query_set}/scenes.parquet", f"query_sets/{query_set}/images.tar"]
    for mechanism in sorted({get_setting(s).mechanism.value for s in DOOR_POLICY_SETTINGS}):
        files += [f"cells/{mechanism}__{query_set}.parquet" for query_set in DOOR_QUERY_SETS]
    return [*files, "policies/policy_dr/encoder_features_door.parquet"]


def _replace_images(query_set: str, changed: set[str], scenes: pd.DataFrame, sim, renderer,
                    root) -> None:
    """Re-render the `changed` scenes' PNGs in the query set's archive; every other member is
    copied as it is (its bytes unchanged)."""

    path = query_images_path(query_set, root)
    rows = {row.scene_id: row for row in scenes.itertuples()}
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
        for scene_id, png in iter_pngs(path):
            if scene_id in changed:
                row = rows[scene_id]
                sim.restore(_layout(row.task, row.layout))
                png = encode_png(renderer.render(sample_draw(row.state_id, int(row.appearance_draw))))
            _add_png(tar, member_name(scene_id), png)
    os.replace(tmp, path)


def _replace_cells(mechanism: str, query_set: str, changed: set[str], root, published) -> int:
    """The published cells of (mechanism, query set) with those of the `changed` scenes
    replaced by the revision root's; returns how many were replaced."""
    old = load_cells(mechanism, query_set, published)
    new = load_cells(mechanism, query_set, root)
    new = new[new.state_id.isin(changed)]
    dropped = int(old.state_id.isin(changed).sum())
    if dropped != len(new):
        raise RevisionNotReady(f"{mechanism}__{query_set}: {dropped} published cells of the changed "
                               f"scenes, {len(new)} re-run")
    frame = pd.concat([old[~old.state_id.isin(changed)], new], ignore_index=True)
    frame = frame.sort_values(list(KEY_COLUMNS)).reset_index(drop=True)
    frame["seed"] = frame["seed"].astype("int64")
    frame["success"] = frame["success"].astype("int8")
    table = cells_table(mechanism, query_set, published)
    tmp = table.with_suffix(".parquet.tmp")
    frame.to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, table)
    return dropped


def publish(sim, renderer, root=REVISION_ROOT, published_root=None, *, features: bool = True,
            log=lambda line: None) -> dict:
    """Republish the Door settings at the revision under `root` (see the module docstring);
    returns the kept version's record. `sim` and `renderer` (a DoorSim and its SceneRenderer)
    render the changed scenes. Refuses (`RevisionNotReady`) when a planned cell is not stored
    or `DATA_VERSION` is still the revised one; a revision already published is refused too."""

    published = root_or_default(published_root)
    record = json.loads((Path(root) / "revision.json").read_text())
    old_version = record["revises_data_version"]
    if DATA_VERSION == old_version:
        raise RevisionNotReady(f"DATA_VERSION is still {old_version}: bump it before publishing")
    if (version_root(old_version, published) / VERSION_RECORD).exists():
        raise RevisionNotReady(f"version {old_version} is already kept: the revision is published")
    planned = plan_revised_cells(root=root, published_root=published)
    stored = set()
    for mechanism, query_set in {(c.mechanism, c.query_set) for c in planned}:
        frame = load_cells(mechanism, query_set, root)
        stored.update(zip(frame.mechanism, frame.query_set, frame.experience_id, frame.state_id,
                          frame.seed.astype(int)))
    missing = [c for c in planned if c.key not in stored]
    if missing:
        raise RevisionNotReady(f"{len(missing)} of {len(planned)} re-run cells not stored yet")
    changed = {q: revised_state_ids(q, root, published) for q in DOOR_QUERY_SETS}
    keep = version_root(old_version, published)
    for rel in _door_files():
        (keep / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(published / rel, keep / rel)
    kept = {"data_version": old_version, "superseded_by": DATA_VERSION,
            "query_set_version": int(record["query_set_version"]) - 1,
            "settings": list(DOOR_POLICY_SETTINGS), "files": _door_files(), "changed_states": changed,
            "why": "the level-2 (door ajar) states start with the latch inside the frame (issue 38)"}
    (keep / VERSION_RECORD).write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    log(f"kept version {old_version} under {keep}")
    for query_set in DOOR_QUERY_SETS:
        scenes = read_scenes(query_set, root)
        shutil.copyfile(query_set_dir(query_set, root) / "scenes.parquet",
                        query_set_dir(query_set, published) / "scenes.parquet")
        scene_ids = set(scenes.scene_id[scenes.state_id.isin(changed[query_set])])
        _replace_images(query_set, scene_ids, scenes, sim, renderer, published)
        log(f"{query_set}: scenes and {len(scene_ids)} images replaced")
        for mechanism in sorted({get_setting(s).mechanism.value for s in DOOR_POLICY_SETTINGS}):
            n = _replace_cells(mechanism, query_set, scene_ids, root, published)
            log(f"{mechanism}__{query_set}: {n} cells replaced")
    if features:
        from leaderboard.rules.embeddings.policy_encoder import export_features  # loads torch

        export_features("door", published, encoder_features_path("door", published))
        log("door encoder features re-exported")
    write_manifest(published)
    return kept

