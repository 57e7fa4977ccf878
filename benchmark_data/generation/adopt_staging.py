"""Adopting the staging root: the regenerated policy settings replace the published ones.

The policies of mechanism 2 and their cells are made in the staging root so the published
settings stay whole until the regeneration is complete. `adopt` moves them in only when every
policy, its gates and every cell are there, in an order that a crash never leaves the
published root without a way on (rerun it); `drop_stale` removes cells of another code version
of their policy. Steps and recovery: docs/data.md, "Adopting the regenerated policy settings".
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmark_data.cells import consolidate, load_cells, writers_excluded
from benchmark_data.generation.export import write_manifest
from benchmark_data.generation.recipe_gates import go_no_go, staged_records
from benchmark_data.paths import STAGING_ROOT, cells_journal, cells_table, root_or_default
from benchmark_data.policy_files import (encoder_features_path, is_trained, policy_dir,
                                         policy_experiences, published_policy_settings)
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS
from expaudit.errors import InvalidInput
from simulator.provenance import POLICY_MECHANISM, policy_code_versions, policy_mechanism_of

__all__ = ["ADOPTED_MARKER", "StagingState", "adopt", "drop_stale", "staging_state"]

ADOPTED_MARKER = "ADOPTED.json"
"""Written into the staging root once the published root holds everything; while it is there,
what remains of the staging root is leftovers to remove, not work to adopt."""


@dataclass(frozen=True)
class StagingState:
    """What the staging root holds against what adopting it needs; `ready` when nothing is missing.

    policies_missing : "mechanism experience" of policies not trained there.
    policies_not_gated : trained there but not of the current policy mechanism with gates measured.
    settings_incomplete : "setting: done/total cells" of published policy settings missing cells;
        a cell counts only when the staged policy's current code version made it.
    go : the go / no-go of docs/policy_protocol.md.
    stale_cells : cells in the staging tables made by another code version of their staged policy.
    adopted : an earlier `adopt` published everything and left staged copies to remove.
    """

    policies_missing: tuple[str, ...]
    policies_not_gated: tuple[str, ...]
    settings_incomplete: tuple[str, ...]
    go: bool
    stale_cells: int = 0
    adopted: bool = False

    @property
    def ready(self) -> bool:
        """Nothing missing: `adopt` would publish the staging root."""
        return (self.go and not self.adopted
                and not (self.policies_missing or self.policies_not_gated or self.settings_incomplete))

    def problems(self) -> list[str]:
        """One line per missing piece, each saying what to do."""
        if self.adopted:
            return [f"already adopted ({ADOPTED_MARKER} is in the staging root): run "
                    "`expaudit data adopt-staging` again to remove the staged copies left"]
        out = [f"policy not trained: {p}" for p in self.policies_missing]
        out += [f"policy not of mechanism {POLICY_MECHANISM} with gates: {p}"
                for p in self.policies_not_gated]
        out += [f"setting incomplete: {s}" for s in self.settings_incomplete]
        if self.stale_cells:
            out.append(f"{self.stale_cells} stale cells (made by another code version of their "
                       "policy: trained again, or its rollout sources changed) never count: "
                       "`expaudit data adopt-staging --drop-stale` removes them, then "
                       "`expaudit data generate --out` runs them anew")
        if not self.go:
            out.append("the go / no-go does not say go (scripts/policy_gates.py)")
        return out


def _roots(staging, root) -> tuple[Path, Path]:
    """(staging root, published root), refused when they are the same folder."""
    staging = STAGING_ROOT if staging is None else Path(staging)
    root = root_or_default(root)
    if staging.resolve() == root.resolve():
        raise InvalidInput(f"staging: {staging} is the published root itself")
    return staging, root


def _gated(mechanism: str, experience_id: str, staging: Path) -> bool:
    """Whether a staged policy is of the current mechanism and has its gates measured."""
    directory = policy_dir(mechanism, experience_id, staging)
    training = json.loads((directory / "training.json").read_text())
    return policy_mechanism_of(str(directory)) == POLICY_MECHANISM and "gates" in training


def _current_versions(cells, mechanism: str, versions: dict):
    """(rows whose experience has a staged policy, rows made by that policy's current weights
    and mechanism: one of its `policy_code_versions`)."""
    accepted = cells.experience_id.map(lambda e: versions.get((mechanism, e)))
    staged = accepted.notna()
    current = pd.Series([bool(ok) and version in ok for version, ok in
                         zip(cells.code_version, accepted)], index=cells.index, dtype=bool)
    return staged, current


def _cells_done(setting, staging: Path, root: Path, versions: dict) -> tuple[int, int, int]:
    """(cells of the setting in the staging root made by its staged policies' code versions,
    total, stale cells of its experiences: made by another code version of their staged policy)."""
    scene_ids = set(read_scenes(setting.query_set, root).scene_id)
    cells = load_cells(setting.mechanism.value, setting.query_set, staging)
    staged, current = _current_versions(cells, setting.mechanism.value, versions)
    ours = cells.experience_id.isin(setting.experience_ids)
    keep = (ours & cells.state_id.isin(scene_ids) & cells.seed.astype(int).between(0, N_SEEDS - 1)
            & current)
    stale = ours & staged & ~current
    done = len(cells[keep].drop_duplicates(["experience_id", "state_id", "seed"]))
    return done, setting.k * len(scene_ids) * N_SEEDS, int(stale.sum())


def staging_state(staging=None, root=None) -> StagingState:
    """Read what the staging root holds, journals included; changes nothing. Scenes come from
    the published root `root`."""
    staging, root = _roots(staging, root)
    if (staging / ADOPTED_MARKER).exists():
        return StagingState((), (), (), go=True, adopted=True)
    versions = _staged_versions(staging)
    missing, not_gated = [], []
    for _, mechanism, eid in policy_experiences():
        if (mechanism, eid) not in versions:
            missing.append(f"{mechanism} {eid}")
        elif not _gated(mechanism, eid, staging):
            not_gated.append(f"{mechanism} {eid}")
    incomplete, stale_tables = [], {}
    for setting in published_policy_settings():
        done, total, stale = _cells_done(setting, staging, root, versions)
        stale_tables[(setting.mechanism.value, setting.query_set)] = stale  # settings may share a table
        if done < total:
            incomplete.append(f"{setting.id}: {done}/{total} cells")
    _, go = go_no_go(staged_records(staging))
    return StagingState(tuple(missing), tuple(not_gated), tuple(incomplete), go,
                        stale_cells=sum(stale_tables.values()))


def _staged_versions(staging: Path) -> dict[tuple[str, str], frozenset[str]]:
    """(mechanism, experience id) -> the code versions that name the current weights of every
    policy trained in `staging` (`policy_code_versions`)."""
    return {(m, e): policy_code_versions(str(policy_dir(m, e, staging)))
            for _, m, e in policy_experiences() if is_trained(m, e, staging)}


def _policy_tables() -> list[tuple[str, str]]:
    """(mechanism, query set) of every cells table of the published policy settings."""
    return sorted({(s.mechanism.value, s.query_set) for s in published_policy_settings()})


def drop_stale(staging=None, root=None, log: Callable[[str], None] = lambda s: None) -> int:
    """Remove the staging tables' stale cells (made by another code version of their policy
    than its current one: the policy was trained again, or its rollout sources changed), so
    that generation runs them anew; returns how many went. Journals are folded in first.
    Refused while a generate run writes to the staging root."""
    staging, root = _roots(staging, root)
    versions = _staged_versions(staging)
    removed = 0
    with writers_excluded(staging, "adopt-staging --drop-stale"):
        for mechanism, query_set in _policy_tables():
            removed += _drop_stale_table(mechanism, query_set, staging, versions, log)
    return removed


def _drop_stale_table(mechanism: str, query_set: str, staging: Path, versions: dict, log) -> int:
    """Rewrite one staging table without its stale cells; how many went."""
    consolidate(mechanism, query_set, staging)
    table = cells_table(mechanism, query_set, staging)
    if not table.exists():
        return 0
    cells = load_cells(mechanism, query_set, staging)
    staged, current = _current_versions(cells, mechanism, versions)
    stale = staged & ~current
    if not stale.any():
        return 0
    tmp = table.with_name(table.name + ".tmp")
    cells[~stale].to_parquet(tmp, index=False)
    os.replace(tmp, table)
    log(f"cells {mechanism} {query_set}: {int(stale.sum())} stale removed "
        f"({', '.join(sorted(set(cells[stale].experience_id)))})")
    return int(stale.sum())


def _replace_dir(source: Path, target: Path) -> None:
    """Copy `source` over `target`; the old folder goes only once the new one is whole."""
    fresh = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(source, fresh)
    if target.exists():
        os.replace(target, old)
    os.replace(fresh, target)
    shutil.rmtree(old, ignore_errors=True)  # absent when `target` was (e.g. a rerun after a crash here)


def _replace_file(source: Path, target: Path) -> None:
    """Copy `source` over `target` through a temporary file, so `target` is old or new, whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def _export_staged_features(staging: Path, root: Path, tasks: list[str]) -> None:
    """The policy_encoder features of the staged Policy+DR policies, written into the staging root."""
    from leaderboard.rules.embeddings.policy_encoder import export_features  # deferred: loads torch

    for task in tasks:
        export_features(task, root, encoder_features_path(task, staging), policies_root=staging)


def _remove_staged(staging: Path, tasks: list[str]) -> None:
    """Remove the staged policies, features and cell tables; what is already gone is skipped,
    any other failure raised (the marker then stays, and a rerun tries again)."""
    for _, mechanism, eid in policy_experiences():
        directory = policy_dir(mechanism, eid, staging)
        if directory.exists():
            shutil.rmtree(directory)
    for task in tasks:
        encoder_features_path(task, staging).unlink(missing_ok=True)
    for mechanism, query_set in _policy_tables():
        cells_table(mechanism, query_set, staging).unlink(missing_ok=True)


def _write_marker(marker: Path, root: Path, tables: list) -> None:
    """The marker, whole or absent: through a synced temporary file and a rename."""
    tmp = marker.with_name(marker.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(json.dumps({"published_to": str(root.resolve()), "tables": [list(t) for t in tables]})
                 + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, marker)


def adopt(staging=None, root=None, *, export: Callable[[Path, Path, list[str]], None] | None = None,
          log: Callable[[str], None] = lambda s: None) -> None:
    """Move the staging root's policies, policy cells and encoder features into `root`.

    Raises `InvalidInput` listing every missing piece, and changes nothing, when
    the staging root is not ready (or is `root` itself, or a generate run writes
    to either). `export(staging, root, tasks)` writes each task's encoder
    features into the staging root (default: the policy_encoder rule's export
    from the staged policies). After a crash, run it again: before the marker it
    redoes the whole step, after it only removes the staged copies left.
    """
    staging, root = _roots(staging, root)
    with writers_excluded(staging, "adopt-staging"), writers_excluded(root, "adopt-staging"):
        _adopt(staging, root, export or _export_staged_features, log)


def _adopt(staging: Path, root: Path, export, log) -> None:
    """`adopt` with generation held off both roots."""
    tasks = sorted({s.task for s in published_policy_settings()})
    marker = staging / ADOPTED_MARKER
    if marker.exists():
        published_to = json.loads(marker.read_text())["published_to"]
        if Path(published_to).resolve() != root.resolve():
            raise InvalidInput(f"root: {root} is not {published_to}, where the staging root was "
                               f"published ({marker}); rerun with --root {published_to}")
        _remove_staged(staging, tasks)
        marker.unlink()
        log("staged copies removed (published by an earlier adopt-staging)")
        return
    state = staging_state(staging, root)
    if not state.ready:
        raise InvalidInput("the staging root is not ready to replace the published policy settings: "
                           + "; ".join(state.problems()))
    export(staging, root, tasks)
    log(f"encoder features of {', '.join(tasks)}: exported from the staged policies")
    tables = _policy_tables()
    for mechanism, query_set in tables:
        consolidate(mechanism, query_set, staging)
    for _, mechanism, eid in policy_experiences():
        _replace_dir(policy_dir(mechanism, eid, staging), policy_dir(mechanism, eid, root))
        log(f"policy {mechanism} {eid}: published")
    for task in tasks:
        _replace_file(encoder_features_path(task, staging), encoder_features_path(task, root))
    for mechanism, query_set in tables:
        _replace_file(cells_table(mechanism, query_set, staging), cells_table(mechanism, query_set, root))
        cells_journal(mechanism, query_set, root).unlink(missing_ok=True)  # the old cells' journal
        log(f"cells {mechanism} {query_set}: published")
    log(f"manifest: {write_manifest(root)}")
    os.sync()  # everything published is on disk before the marker says so
    _write_marker(marker, root, tables)
    _remove_staged(staging, tasks)
    marker.unlink()
