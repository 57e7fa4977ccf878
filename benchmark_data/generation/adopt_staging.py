"""Adopting the staging root: the regenerated policy settings replace the published ones in one step.

The policies of policy mechanism 2 and their cells are made in the staging
root (`benchmark_data/staging/README.md`) so the published settings stay whole
until the regeneration is complete. `adopt` moves them into the published root
only when every one of the twelve policies is trained with its gates measured,
the go / no-go says go, and all eight policy settings hold every cell of all
five seeds; otherwise it changes nothing and lists what is missing. After the
move the Policy+DR encoder features are exported from the new policies (the
old file describes the old encoders) and the manifest is rewritten.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchmark_data.cells import consolidate, load_cells
from benchmark_data.paths import STAGING_ROOT, cells_journal, cells_table, root_or_default
from benchmark_data.policy_files import POLICY_MECHANISMS, is_trained, policy_dir, policy_experiences
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS, SETTINGS
from expaudit.errors import InvalidInput
from runner.provenance import POLICY_MECHANISM, policy_mechanism_of

__all__ = ["StagingState", "adopt", "staging_state"]

@dataclass(frozen=True)
class StagingState:
    """What the staging root holds against what adopting it needs; `ready` when nothing is missing.

    policies_missing : "mechanism experience" of policies not trained there.
    policies_not_gated : trained there but not of the current policy mechanism with gates measured.
    settings_incomplete : "setting: done/total cells" of policy settings missing cells.
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
        out += [f"policy not of mechanism {POLICY_MECHANISM} with gates: {p}" for p in self.policies_not_gated]
        out += [f"setting incomplete: {s}" for s in self.settings_incomplete]
        if not self.go:
            out.append("the go / no-go does not say go (scripts/policy_gates.py)")
        return out


def policy_settings() -> list:
    """Every setting run by policies (the sealed ones included, if any)."""
    return [s for s in SETTINGS.values() if s.mechanism in POLICY_MECHANISMS]


def _gated(mechanism: str, experience_id: str, staging: Path) -> bool:
    directory = policy_dir(mechanism, experience_id, staging)
    training = json.loads((directory / "training.json").read_text())
    return policy_mechanism_of(directory) == POLICY_MECHANISM and "gates" in training


def _cells_done(setting, staging: Path, root: Path) -> tuple[int, int]:
    """(stored cells of the setting's experiences, scenes and seeds in the staging root, total)."""
    scene_ids = set(read_scenes(setting.query_set, root).scene_id)
    cells = load_cells(setting.mechanism.value, setting.query_set, staging)
    keep = (cells.experience_id.isin(setting.experience_ids) & cells.state_id.isin(scene_ids)
            & cells.seed.astype(int).between(0, N_SEEDS - 1))
    done = len(cells[keep].drop_duplicates(["experience_id", "state_id", "seed"]))
    return done, setting.k * len(scene_ids) * N_SEEDS


def staging_state(staging=None, root=None) -> StagingState:
    """Read what the staging root holds (scenes come from the published root `root`)."""
    from benchmark_data.generation.recipe_policies import go_no_go, staged_records

    staging = STAGING_ROOT if staging is None else Path(staging)
    root = root_or_default(root)
    missing, not_gated = [], []
    for _, mechanism, eid in policy_experiences():
        if not is_trained(mechanism, eid, staging):
            missing.append(f"{mechanism} {eid}")
        elif not _gated(mechanism, eid, staging):
            not_gated.append(f"{mechanism} {eid}")
    incomplete = []
    for setting in policy_settings():
        done, total = _cells_done(setting, staging, root)
        if done < total:
            incomplete.append(f"{setting.id}: {done}/{total} cells")
    _, go = go_no_go(staged_records(staging))
    return StagingState(tuple(missing), tuple(not_gated), tuple(incomplete), go)


def _replace_dir(source: Path, target: Path) -> None:
    """Copy `source` to `target`, replacing it; the old folder goes only once the new one is whole."""
    fresh = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(source, fresh)
    if target.exists():
        os.replace(target, old)
    os.replace(fresh, target)
    shutil.rmtree(old, ignore_errors=True)


def _replace_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def adopt(staging=None, root=None, *, export_features: Callable | None = None,
          log: Callable[[str], None] = lambda s: None) -> StagingState:
    """Move the staging root's policies and policy cells into the published root `root`.

    Raises `InvalidInput` listing every missing piece, and changes nothing, when
    the staging root is not ready. `export_features(task, root)` writes the
    Policy+DR encoder features of a task (default: the policy_encoder rule's
    export); the manifest is rewritten last. The staging copies are removed
    once everything is in place.
    """
    staging = STAGING_ROOT if staging is None else Path(staging)
    root = root_or_default(root)
    for setting in policy_settings():
        consolidate(setting.mechanism.value, setting.query_set, staging)
    state = staging_state(staging, root)
    if not state.ready:
        raise InvalidInput("the staging root is not ready to replace the published policy settings: "
                           + "; ".join(state.problems()))
    for _, mechanism, eid in policy_experiences():
        _replace_dir(policy_dir(mechanism, eid, staging), policy_dir(mechanism, eid, root))
        log(f"policy {mechanism} {eid}: published")
    tables = sorted({(s.mechanism.value, s.query_set) for s in policy_settings()})
    for mechanism, query_set in tables:
        _replace_file(cells_table(mechanism, query_set, staging), cells_table(mechanism, query_set, root))
        cells_journal(mechanism, query_set, root).unlink(missing_ok=True)
        log(f"cells {mechanism} {query_set}: published")
    if export_features is None:
        from leaderboard.rules.embeddings.policy_encoder import export_features
    for task in sorted({s.task for s in policy_settings()}):
        log(f"encoder features {task}: {export_features(task, root)}")
    from benchmark_data.generation.export import write_manifest

    log(f"manifest: {write_manifest(root)}")
    for _, mechanism, eid in policy_experiences():
        shutil.rmtree(policy_dir(mechanism, eid, staging))
    for mechanism, query_set in tables:
        cells_table(mechanism, query_set, staging).unlink()
    return state
