"""A published data root and a staging tree of regenerated policy settings, made small, for
the tests of adopting staged data."""

import functools
import json
import shutil

from benchmark_data.paths import FROZEN_ROOT, cells_journal
from benchmark_data.policy_files import policy_dir, policy_experiences
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS, SETTINGS, Mechanism
from expaudit.journal import CELL_COLUMNS
from simulator.provenance import policy_code_version


POLICY_SETTINGS = [s for s in SETTINGS.values() if s.mechanism in (Mechanism.POLICY, Mechanism.POLICY_DR)]


def published_tree(tmp_path):
    """A published root with the real query-set scene tables and version-1 policies and cells."""
    root = tmp_path / "published"
    for q in {s.query_set for s in POLICY_SETTINGS}:
        (root / "query_sets" / q).mkdir(parents=True)
        shutil.copyfile(FROZEN_ROOT / "query_sets" / q / "scenes.parquet",
                        root / "query_sets" / q / "scenes.parquet")
    for _, mechanism, eid in policy_experiences():
        d = policy_dir(mechanism, eid, root)
        d.mkdir(parents=True)
        (d / "weights.pt").write_bytes(b"version 1")
        (d / "spec.json").write_text(json.dumps({"image_size": 64}))
        (d / "training.json").write_text(json.dumps({"task": eid.split("-")[0], "mechanism": mechanism}))
    write_cells(root, success=0, code_version=lambda m, e: "sha256:old")
    return root


def write_cells(root, *, success, code_version, skip=0):
    """Every cell of every policy setting (minus the last `skip` of each), as journals;
    `code_version(mechanism, experience)` names the code version of each."""
    for setting in POLICY_SETTINGS:
        scenes = list(read_scenes(setting.query_set, root).scene_id)
        rows = [dict(mechanism=setting.mechanism.value, query_set=setting.query_set, experience_id=e,
                     state_id=sid, seed=seed, success=success, state_hash="s", final_hash="f", wall_s=1.0,
                     code_version=code_version(setting.mechanism.value, e), packages="{}")
                for seed in range(N_SEEDS) for e in setting.experience_ids for sid in scenes]
        rows = rows[:len(rows) - skip]
        journal = cells_journal(setting.mechanism.value, setting.query_set, root)
        journal.parent.mkdir(parents=True, exist_ok=True)
        with journal.open("a") as fh:
            fh.writelines(json.dumps({k: r[k] for k in CELL_COLUMNS}) + "\n" for r in rows)


def staged_version(staging):
    """The code version of each staged policy (a policy left out: a version no policy has)."""
    @functools.cache
    def version(mechanism, experience_id):
        directory = policy_dir(mechanism, experience_id, staging)
        return policy_code_version(str(directory)) if directory.exists() else "sha256:no-policy"
    return version


def staging_tree(tmp_path, root, *, skip_policy=None, skip_cells=0, validation=(30, 40, 60, 160),
             code_version=None):
    staging = tmp_path / "staging"
    for task, mechanism, eid in policy_experiences():
        if (mechanism, eid) == skip_policy:
            continue
        d = policy_dir(mechanism, eid, staging)
        d.mkdir(parents=True)
        (d / "weights.pt").write_bytes(f"version 2 {mechanism} {eid}".encode())
        (d / "spec.json").write_text(json.dumps({"image_size": 64, "policy_mechanism": 2}))
        d0, n0, d14, n14 = validation
        (d / "training.json").write_text(json.dumps({
            "task": task, "mechanism": mechanism, "experience_id": eid, "gates": {},
            "validation": {"groups": {"draw 0": [d0, n0], "draws 1-4": [d14, n14], "own": [20, 20]}}}))
    # the scenes come from the published root; staging holds policies and cells only
    for q in {s.query_set for s in POLICY_SETTINGS}:
        (staging / "query_sets" / q).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "query_sets" / q / "scenes.parquet", staging / "query_sets" / q / "scenes.parquet")
    write_cells(staging, success=1, code_version=code_version or staged_version(staging), skip=skip_cells)
    return staging
