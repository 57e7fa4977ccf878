"""Adopting the staging root: all or nothing, and only once every policy and cell is there."""

import hashlib
import json
import shutil

import pandas as pd
import pytest

from benchmark_data.cells import load_cells
from benchmark_data.generation.adopt_staging import adopt, drop_stale, staging_state
from benchmark_data.paths import cells_journal, cells_table
from benchmark_data.policy_files import policy_dir, policy_experiences
from benchmark_data.registry import N_SEEDS, Mechanism
from expaudit.errors import InvalidInput
from simulator.provenance import policy_code_version
from tests.support.staging import (POLICY_SETTINGS, published_tree, staged_version,
                                    staging_tree, write_cells)


def _tree_hash(path):
    """Every file's path and bytes; the empty lock file generation runs take is not data."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.name != ".writers.lock":
            h.update(p.relative_to(path).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def _export(calls):
    """Records the call and writes a features file per task into the staging root, as the
    policy_encoder export does (tested with real policies in its own tests)."""
    def export(staging, root, tasks):
        calls.append(tuple(tasks))
        for task in tasks:
            pd.DataFrame({"task": [task]}).to_parquet(
                staging / "policies" / "policy_dr" / f"encoder_features_{task}.parquet")
    return export


@pytest.mark.parametrize("case", ["policy missing", "one cell missing", "no go", "cells of another version"])
def test_a_staging_root_that_is_not_ready_changes_nothing_and_says_what_is_missing(tmp_path, case):
    root = published_tree(tmp_path)
    kwargs = {"policy missing": dict(skip_policy=("policy_dr", "door-e001")),
              "one cell missing": dict(skip_cells=1),
              "no go": dict(validation=(5, 40, 10, 160)),
              # cells made before a policy was trained again do not count
              "cells of another version": dict(code_version=lambda m, e: "sha256:retrained")}[case]
    staging = staging_tree(tmp_path, root, **kwargs)
    before = _tree_hash(root), _tree_hash(staging)
    calls = []
    with pytest.raises(InvalidInput) as err:
        adopt(staging, root, export=_export(calls))
    message = str(err.value)
    expected = {"policy missing": "policy not trained: policy_dr door-e001",
                "one cell missing": "setting incomplete: door-policydr-k3-fresh: 2999/3000 cells",
                "no go": "the go / no-go does not say go",
                "cells of another version": "setting incomplete: stack-policy-k3-orig: 0/3000 cells"}[case]
    assert expected in message
    assert (_tree_hash(root), _tree_hash(staging)) == before and calls == []  # journals too
    assert not staging_state(staging, root).ready


def test_a_complete_staging_root_replaces_policies_and_cells_and_empties_itself(tmp_path):
    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    assert staging_state(staging, root).ready
    calls = []
    adopt(staging, root, export=_export(calls))
    assert calls == [("door", "stack")]
    for _, mechanism, eid in policy_experiences():
        d = policy_dir(mechanism, eid, root)
        assert (d / "weights.pt").read_bytes() == f"version 2 {mechanism} {eid}".encode()
        assert json.loads((d / "spec.json").read_text())["policy_mechanism"] == 2
        assert not policy_dir(mechanism, eid, staging).exists()
        assert not d.with_name(d.name + ".old").exists() and not d.with_name(d.name + ".new").exists()
    for setting in POLICY_SETTINGS:
        cells = load_cells(setting.mechanism.value, setting.query_set, root)
        assert set(cells.code_version) == {policy_code_version(str(policy_dir(setting.mechanism.value, e, root)))
                                           for e in setting.experience_ids}
        assert cells.success.eq(1).all()
        assert not cells_journal(setting.mechanism.value, setting.query_set, root).exists()
        assert not cells_table(setting.mechanism.value, setting.query_set, staging).exists()
    assert not list(staging.glob("policies/*/encoder_features_*.parquet"))
    assert (root / "policies" / "policy_dr" / "encoder_features_stack.parquet").exists()
    manifest = json.loads((root / "manifest.json").read_text())
    assert "policies/policy_dr/encoder_features_stack.parquet" in manifest["files"]
    assert manifest["files"]["policies/policy/stack-e000/weights.pt"]["bytes"] == len(b"version 2 policy stack-e000")
    assert (root / "cells" / ".writers.lock").exists()  # adopt held it while writing the manifest
    assert not [name for name in manifest["files"] if name.endswith(".writers.lock")]  # not data


def test_the_published_root_is_never_its_own_staging_root(tmp_path):
    root = published_tree(tmp_path)
    before = _tree_hash(root)
    with pytest.raises(InvalidInput, match="is the published root itself"):
        adopt(root, root, export=_export([]))
    with pytest.raises(InvalidInput, match="is the published root itself"):
        staging_state(root, root)
    assert _tree_hash(root) == before


def test_a_rerun_after_a_crash_while_replacing_finishes_the_job(tmp_path, monkeypatch):
    import benchmark_data.generation.adopt_staging as adopt_module

    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    real = adopt_module._replace_file
    calls = {"n": 0}

    def crash_on_the_third_table(source, target):
        if target.name.endswith(".parquet") and "cells" in target.parts:
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError("disk full")
        real(source, target)

    monkeypatch.setattr(adopt_module, "_replace_file", crash_on_the_third_table)
    with pytest.raises(OSError, match="disk full"):
        adopt(staging, root, export=_export([]))
    assert staging_state(staging, root).ready  # nothing staged is gone yet
    monkeypatch.setattr(adopt_module, "_replace_file", real)
    adopt(staging, root, export=_export([]))
    for setting in POLICY_SETTINGS:
        assert load_cells(setting.mechanism.value, setting.query_set, root).success.eq(1).all()
    assert not list(root.rglob("*.old")) and not list(root.rglob("*.new")) and not list(root.rglob("*.tmp"))


def test_a_rerun_after_a_crash_between_the_two_renames_of_a_policy_finishes_the_job(tmp_path, monkeypatch):
    """The published folder was moved aside and the crash came before the new one took its
    place: the rerun finds no published folder there and must not trip over the absent `.old`."""
    import os

    import benchmark_data.generation.adopt_staging as adopt_module

    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    target = policy_dir("policy", "stack-e001", root)
    real_replace = os.replace

    def crash_after_moving_the_old_one_aside(source, destination):
        real_replace(source, destination)
        if str(destination) == str(target) + ".old":
            raise OSError("killed")

    monkeypatch.setattr(adopt_module.os, "replace", crash_after_moving_the_old_one_aside)
    with pytest.raises(OSError, match="killed"):
        adopt(staging, root, export=_export([]))
    monkeypatch.setattr(adopt_module.os, "replace", real_replace)
    assert not target.exists() and staging_state(staging, root).ready
    adopt(staging, root, export=_export([]))
    assert (target / "weights.pt").read_bytes() == b"version 2 policy stack-e001"
    assert not list(root.rglob("*.old")) and not list(root.rglob("*.new"))


def test_a_rerun_after_a_crash_while_removing_the_staged_copies_finishes_the_cleanup(tmp_path, monkeypatch):
    import benchmark_data.generation.adopt_staging as adopt_module

    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    real_rmtree = adopt_module.shutil.rmtree
    removed = []

    def crash_on_the_third_policy(path, *args, **kwargs):
        if "policies" in str(path) and str(path).startswith(str(staging)):
            removed.append(path)
            if len(removed) == 3:
                raise OSError("killed")
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(adopt_module.shutil, "rmtree", crash_on_the_third_policy)
    with pytest.raises(OSError, match="killed"):
        adopt(staging, root, export=_export([]))
    monkeypatch.setattr(adopt_module.shutil, "rmtree", real_rmtree)
    published = _tree_hash(root)
    state = staging_state(staging, root)
    assert state.adopted and not state.ready
    assert "already adopted" in state.problems()[0] and len(state.problems()) == 1
    adopt(staging, root, export=_export([]))
    assert _tree_hash(root) == published  # the rerun only cleans up
    assert not (staging / "ADOPTED.json").exists()
    assert not list(staging.glob("policies/*/*")) and not list(staging.glob("cells/*.parquet"))


def test_stale_cells_are_named_and_dropped_so_that_generation_runs_them_anew(tmp_path):
    """Cells of a staged policy trained again never count; `drop_stale` removes exactly those."""
    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    retrained = policy_dir("policy", "stack-e000", staging) / "weights.pt"
    retrained.write_bytes(b"version 2, trained again")
    state = staging_state(staging, root)
    per_setting = sum(1 for s in POLICY_SETTINGS if s.mechanism == Mechanism.POLICY and s.task == "stack")
    stale = per_setting * 200 * N_SEEDS
    assert state.stale_cells == stale and not state.ready
    assert any(f"{stale} stale cells" in line and "--drop-stale" in line for line in state.problems())
    assert "setting incomplete: stack-policy-k3-orig: 2000/3000 cells" in state.problems()
    assert drop_stale(staging, root) == stale
    assert staging_state(staging, root).stale_cells == 0
    for setting in POLICY_SETTINGS:
        cells = load_cells(setting.mechanism.value, setting.query_set, staging)
        left = cells[cells.experience_id == "stack-e000"]
        assert setting.mechanism != Mechanism.POLICY or left.empty
    # generation runs the dropped cells anew under the current version: the root is ready again
    current = staged_version(staging)
    write_cells(staging, success=1, code_version=current)
    assert staging_state(staging, root).ready
    assert drop_stale(staging, root) == 0


def test_nothing_is_adopted_or_dropped_while_a_generate_run_writes_there(tmp_path):
    """A run's executors keep their journals open: folding or moving the tables under them
    would lose the cells they write next, so both steps refuse while one holds the root."""
    from benchmark_data.cells import writing_cells

    root = published_tree(tmp_path)
    staging = staging_tree(tmp_path, root)
    before = _tree_hash(root), _tree_hash(staging)
    for busy in (staging, root):
        with writing_cells(busy):
            with pytest.raises(InvalidInput, match=f"a generate run is writing cells under {busy}"):
                adopt(staging, root, export=_export([]))
            if busy == staging:
                with pytest.raises(InvalidInput, match="adopt-staging --drop-stale: a generate run"):
                    drop_stale(staging, root)
    assert (_tree_hash(root), _tree_hash(staging)) == before
    adopt(staging, root, export=_export([]))  # once the run is over
    assert not staging_state(staging, root).ready


def test_a_generate_run_holds_its_store_for_as_long_as_it_runs(tmp_path, monkeypatch):
    import benchmark_data.generation.rollouts as rollouts
    from benchmark_data.cells import writers_excluded

    seen = []

    def inside(cells, workers, root, store, policies, require_go, log):
        with pytest.raises(InvalidInput, match="a generate run is writing"):
            with writers_excluded(store):
                pass
        seen.append(store)
        return 0

    monkeypatch.setattr(rollouts, "_run_cells", inside)
    assert rollouts.run_cells([], root=tmp_path / "inputs", out=tmp_path / "store") == 0
    assert seen == [tmp_path / "store"]
    with writers_excluded(tmp_path / "store"):  # released once it returned
        # and a run started while a step rewrites the tables is refused, not kept waiting
        with pytest.raises(InvalidInput, match="generate: adopt-staging or --drop-stale is rewriting"):
            rollouts.run_cells([], root=tmp_path / "inputs", out=tmp_path / "store")
