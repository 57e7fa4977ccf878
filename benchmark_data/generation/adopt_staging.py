"""Adopting the staging root: the regenerated policy settings replace the published ones.

The policies of policy mechanism 2 and their cells are made in the staging
root (`benchmark_data/staging/README.md`) so the published settings stay whole
until the regeneration is complete. `adopt` moves them into the published root
only when every one of the twelve policies is trained with its gates measured,
the go / no-go says go, and all eight published policy settings hold every
cell of all five seeds, each made by the staged policy's own code version;
otherwise it changes nothing and lists what is missing.

Order, so that a crash never leaves the published root without a way on:
the Policy+DR encoder features are exported from the staged policies into the
staging root first (the step most likely to fail: it needs torch and the
image archives); then policies, cell tables and features replace the
published ones, each file or folder whole; the manifest is rewritten; the
staged copies go last. A rerun after a crash finds the staging root still
complete and finishes the job.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmark_data.cells import consolidate, load_cells
from benchmark_data.generation.export import write_manifest
from benchmark_data.generation.recipe_policies import go_no_go, staged_records
from benchmark_data.paths import STAGING_ROOT, cells_journal, cells_table, root_or_default
from benchmark_data.policy_files import (is_trained, policy_dir, policy_experiences,
                                         published_policy_settings)
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS
from expaudit.errors import InvalidInput
from runner.provenance import POLICY_MECHANISM, policy_code_version, policy_mechanism_of

__all__ = ["StagingState", "adopt", "staging_state"]

ENCODER_MECHANISM = "policy_dr"
"""The mechanism whose policies' encoder the policy_encoder rule reads."""


@dataclass(frozen=True)
class StagingState:
    """What the staging root holds against what adopting it needs; `ready` when nothing is missing.

    policies_missing : "mechanism experience" of policies not trained there.
    policies_not_gated : trained there but not of the current policy mechanism with gates measured.
    settings_incomplete : "setting: done/total cells" of published policy settings missing cells;
        a cell counts only when the staged policy's current code version made it.
    go : the go / no-go of docs/policy_protocol.md.
    """

    policies_missing: tuple[str, ...]
    policies_not_gated: tuple[str, ...]
    settings_incomplete: tuple[str, ...]
    go: bool

    @property
    def ready(self) -> bool:
        return self.go and not (self.policies_missing or self.policies_not_gated or self.settings_incomplete)

    def problems(self) -> list[str]:
        out = [f"policy not trained: {p}" for p in self.policies_missing]
        out += [f"policy not of mechanism {POLICY_MECHANISM} with gates: {p}"
                for p in self.policies_not_gated]
        out += [f"setting incomplete: {s}" for s in self.settings_incomplete]
        if not self.go:
            out.append("the go / no-go does not say go (scripts/policy_gates.py)")
        return out


def _roots(staging, root) -> tuple[Path, Path]:
    staging = STAGING_ROOT if staging is None else Path(staging)
    root = root_or_default(root)
    if staging.resolve() == root.resolve():
        raise InvalidInput(f"staging: {staging} is the published root itself")
    return staging, root


def _gated(mechanism: str, experience_id: str, staging: Path) -> bool:
    directory = policy_dir(mechanism, experience_id, staging)
    training = json.loads((directory / "training.json").read_text())
    return policy_mechanism_of(str(directory)) == POLICY_MECHANISM and "gates" in training


def _cells_done(setting, staging: Path, root: Path, versions: dict) -> tuple[int, int]:
    """(cells of the setting in the staging root made by its staged policies' code versions, total)."""
    scene_ids = set(read_scenes(setting.query_set, root).scene_id)
    cells = load_cells(setting.mechanism.value, setting.query_set, staging)
    made_by = cells.experience_id.map(lambda e: versions.get((setting.mechanism.value, e)))
    keep = (cells.experience_id.isin(setting.experience_ids) & cells.state_id.isin(scene_ids)
            & cells.seed.astype(int).between(0, N_SEEDS - 1) & (cells.code_version == made_by))
    done = len(cells[keep].drop_duplicates(["experience_id", "state_id", "seed"]))
    return done, setting.k * len(scene_ids) * N_SEEDS


def staging_state(staging=None, root=None) -> StagingState:
    """Read what the staging root holds, journals included; changes nothing. Scenes come from
    the published root `root`."""
    staging, root = _roots(staging, root)
    missing, not_gated, versions = [], [], {}
    for _, mechanism, eid in policy_experiences():
        if not is_trained(mechanism, eid, staging):
            missing.append(f"{mechanism} {eid}")
            continue
        versions[(mechanism, eid)] = policy_code_version(str(policy_dir(mechanism, eid, staging)))
        if not _gated(mechanism, eid, staging):
            not_gated.append(f"{mechanism} {eid}")
    incomplete = []
    for setting in published_policy_settings():
        done, total = _cells_done(setting, staging, root, versions)
        if done < total:
            incomplete.append(f"{setting.id}: {done}/{total} cells")
    _, go = go_no_go(staged_records(staging))
    return StagingState(tuple(missing), tuple(not_gated), tuple(incomplete), go)


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
    shutil.rmtree(old)


def _replace_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def _features(task: str, staging: Path) -> Path:
    return staging / "policies" / ENCODER_MECHANISM / f"encoder_features_{task}.parquet"


def _export_staged_features(staging: Path, root: Path, tasks: list[str]) -> None:
    """The policy_encoder features of the staged Policy+DR policies, written into the staging root."""
    from leaderboard.rules.embeddings.policy_encoder import export_features  # deferred: loads torch

    for task in tasks:
        export_features(task, root, _features(task, staging), policies_root=staging)


def adopt(staging=None, root=None, *, export: Callable[[Path, Path, list[str]], None] | None = None,
          log: Callable[[str], None] = lambda s: None) -> StagingState:
    """Move the staging root's policies, policy cells and encoder features into `root`.

    Raises `InvalidInput` listing every missing piece, and changes nothing, when
    the staging root is not ready (or is `root` itself). `export(staging, root,
    tasks)` writes each task's encoder features into the staging root (default:
    the policy_encoder rule's export from the staged policies). Returns the
    state that was adopted.
    """
    staging, root = _roots(staging, root)
    state = staging_state(staging, root)
    if not state.ready:
        raise InvalidInput("the staging root is not ready to replace the published policy settings: "
                           + "; ".join(state.problems()))
    settings = published_policy_settings()
    tasks = sorted({s.task for s in settings})
    (export or _export_staged_features)(staging, root, tasks)
    log(f"encoder features of {', '.join(tasks)}: exported from the staged policies")
    tables = sorted({(s.mechanism.value, s.query_set) for s in settings})
    for mechanism, query_set in tables:
        consolidate(mechanism, query_set, staging)
    for _, mechanism, eid in policy_experiences():
        _replace_dir(policy_dir(mechanism, eid, staging), policy_dir(mechanism, eid, root))
        log(f"policy {mechanism} {eid}: published")
    for task in tasks:
        _replace_file(_features(task, staging), _features(task, root))
    for mechanism, query_set in tables:
        _replace_file(cells_table(mechanism, query_set, staging), cells_table(mechanism, query_set, root))
        cells_journal(mechanism, query_set, root).unlink(missing_ok=True)  # the old cells' journal
        log(f"cells {mechanism} {query_set}: published")
    log(f"manifest: {write_manifest(root)}")
    for _, mechanism, eid in policy_experiences():
        shutil.rmtree(policy_dir(mechanism, eid, staging))
    for task in tasks:
        _features(task, staging).unlink()
    for mechanism, query_set in tables:
        cells_table(mechanism, query_set, staging).unlink()
    return state
