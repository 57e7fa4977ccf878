"""The settings registry, the frozen loaders, export, manifest and verification."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark_data.registry import SETTINGS, Mechanism, UnknownSettingError, get_setting
from leaderboard.matrix import MISSING
from tests.support.paths import REPO_ROOT


def test_registry_lists_the_fourteen_settings():
    assert len(SETTINGS) == 14
    assert list(SETTINGS)[:5] == ["stack-replay-k3-orig", "stack-replay-k3-fresh", "stack-replay-k10-a",
                                  "stack-replay-k10-b", "stack-replay-k50"]
    hidden = get_setting("stack-replay-k10-hidden")
    assert hidden.sealed and hidden.query_set == "stack-hidden"
    assert hidden.experience_ids == get_setting("stack-replay-k10-a").experience_ids
    k3, k10a, k50 = (get_setting(s).experience_ids for s in
                     ("stack-replay-k3-orig", "stack-replay-k10-a", "stack-replay-k50"))
    assert k10a[:3] == k3 and k50[:10] == k10a  # nested prefixes of the stream
    assert not set(get_setting("stack-replay-k10-b").experience_ids) & set(k50)
    assert all(s.k == len(s.experience_ids) for s in SETTINGS.values())
    assert get_setting("door-policydr-k3-fresh").mechanism is Mechanism.POLICY_DR


def test_unknown_setting_lists_valid_ids():
    with pytest.raises(UnknownSettingError, match="unknown setting 'stack-k99'; valid setting ids: stack-replay-k3-orig"):
        get_setting("stack-k99")
    with pytest.raises(KeyError):
        get_setting("x")


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory):
    """A frozen root with a 3-experience stream, stack-orig, and a handful of real cells."""
    pytest.importorskip("robosuite")
    from benchmark_data.generation.rollouts import run_cells
    from benchmark_data.generation.library_stream import build_stack_stream, write_stack_library
    from benchmark_data.generation.query_set_build import stack_scene_rows
    from benchmark_data.query_sets import write_scenes
    from simulator.executor import Cell
    from simulator.stack_sim import StackSim

    root = tmp_path_factory.mktemp("frozen")
    sim = StackSim()
    accepted, rows = build_stack_stream(sim, n_accepted=3)
    write_stack_library(accepted, rows, root)
    write_scenes("stack-orig", stack_scene_rows("stack-orig", sim), root)
    cells = [Cell("replay", "stack-orig", "stack-e000", "stack-orig-s00", s) for s in range(3)]
    cells.append(Cell("replay", "stack-orig", "stack-e002", "stack-orig-s33", 4))
    run_cells(cells, workers=1, root=root)
    return root


@pytest.mark.sim
def test_load_transfer_labels_every_render_of_a_state(tiny_root):
    from benchmark_data.frozen import completeness, load_transfer

    data = load_transfer("stack-replay-k3-orig", root=tiny_root)
    assert data.shape == (3, 200, 5)
    assert data.scenes.scene_ids[:2] == ("stack-orig-s00-d0", "stack-orig-s00-d1")
    block = data.outcomes[0, :5, :3]  # state s00, draws 0-4, seeds 0-2
    assert (block != MISSING).all() and (block == block[0]).all()
    assert (data.outcomes[0, :5, 3:] == MISSING).all()
    assert completeness("stack-replay-k3-orig", root=tiny_root) == (4 * 5, 3000)
    from benchmark_data.library import LibraryNotFoundError

    with pytest.raises(LibraryNotFoundError, match="experiences .* are not in library 'stack-stream'"):
        load_transfer("stack-replay-k10-a", root=tiny_root)


@pytest.mark.sim
def test_export_writes_the_audit_input_format(tiny_root, tmp_path):
    from benchmark_data.generation.export import SealedSettingError, export_setting

    result = export_setting("stack-replay-k3-orig", tmp_path / "out", root=tiny_root)
    e = pd.read_csv(tmp_path / "out" / "experiences.csv")
    o = pd.read_csv(tmp_path / "out" / "outcomes.csv")
    s = pd.read_csv(tmp_path / "out" / "scenes.csv")
    assert list(e.columns) == ["experience_id"] and len(e) == 3
    assert list(o.columns) == ["experience_id", "scene_id", "seed", "success"]
    assert list(s.columns) == ["scene_id", "state_id", "layout_level", "appearance_draw"]
    assert len(o) == result.n_outcomes == 20 and result.n_missing == 3000 - 20
    assert set(o["success"]) <= {0, 1}
    with pytest.raises(SealedSettingError, match="'stack-replay-k10-hidden' is sealed"):
        export_setting("stack-replay-k10-hidden", tmp_path / "x", root=tiny_root)


@pytest.mark.sim
def test_manifest_hashes_files_and_counts_the_stream(tiny_root):
    from benchmark_data.generation.export import build_manifest, write_manifest

    path = write_manifest(tiny_root)
    manifest = json.loads(path.read_text())
    assert "libraries/stack-stream/experiences.parquet" in manifest["files"]
    assert "cells/replay__stack-orig.parquet" in manifest["files"]
    assert all(len(v["sha256"]) == 64 for v in manifest["files"].values())
    stream = manifest["recording_streams"]["stack-stream"]
    assert stream["accepted"] == 3 and 0 <= stream["rejection_rate"] < 1
    assert manifest["settings"]["stack-replay-k3-orig"] == {"cells_done": 20, "cells_total": 3000,
                                                              "seeds_complete": []}
    assert build_manifest(tiny_root)["files"] == manifest["files"]  # stable


def test_the_committed_manifest_lists_every_readout_file():
    """Banks, features, outcomes and reference reports are published files: each is in
    manifest.json with its size (journals of runs in progress are not data)."""
    frozen = REPO_ROOT / "benchmark_data" / "frozen"
    listed = json.loads((frozen / "manifest.json").read_text())["files"]
    published = {p.relative_to(frozen).as_posix(): p.stat().st_size
                 for p in sorted((frozen / "readout").rglob("*")) if p.is_file() and p.suffix != ".jsonl"}
    for bank in ("door-v1", "stack-v1", "door-v2", "stack-v2"):
        for name in ("bank.json", "observations.parquet", "labels.parquet", "outcomes.parquet",
                     "reports/reference-confirm.json", "features/raw32/features.json"):
            assert f"readout/{bank}/{name}" in published
    missing = sorted(set(published) - set(listed))
    assert not missing, f"not in manifest.json (run expaudit data manifest): {missing[:5]}"
    assert {path: listed[path]["bytes"] for path in published} == published


@pytest.mark.sim
def test_verify_reexecutes_across_renders(tiny_root):
    """Verify names a stored outcome that re-execution does not give, including one that
    belongs to another seed of the same cell. (Cells made here by the code under test are
    re-checked by that same code: a bug in both agrees with itself. tests/simulator/test_golden_cells.py
    compares against the frozen values instead.)"""
    from benchmark_data.cells import cells_table
    from benchmark_data.generation.verify import verify_sample

    report = verify_sample(4, root=tiny_root)
    assert report.n_checked == 4 and report.ok
    table = cells_table("replay", "stack-orig", tiny_root)
    original = pd.read_parquet(table)
    frame = original.copy()
    frame.loc[0, "success"] = 1 - frame.loc[0, "success"]  # tamper with one stored outcome
    frame.to_parquet(table, index=False)
    tampered = verify_sample(4, root=tiny_root)
    assert [m.field for m in tampered.mismatches] == ["success"]
    frame = original.copy()
    rows = frame.index[(frame["experience_id"] == "stack-e000") & frame["seed"].isin([0, 1])]
    frame.loc[rows, "final_hash"] = frame.loc[rows[::-1], "final_hash"].to_numpy()  # seeds 0, 1 swapped
    frame.to_parquet(table, index=False)
    swapped = verify_sample(4, root=tiny_root)
    assert sorted(m.key[4] for m in swapped.mismatches if m.field == "final_hash") == [0, 1]
    original.to_parquet(table, index=False)


def test_frozen_replay_settings_discriminate():
    """The published K=3-orig tensor, when present, meets the benchmark's discrimination bar."""
    from benchmark_data.frozen import load_transfer

    data = load_transfer("stack-replay-k3-orig")
    if not data.is_complete:
        pytest.skip("stack-replay-k3-orig is not complete in this checkout")
    y = data.success_matrix()
    random, oracle = y.mean(), y.max(axis=0).mean()
    assert 0.3 <= random <= 0.85 and oracle - random >= 0.10
    assert np.unique(data.scenes.state_ids).size == 40


@pytest.mark.parametrize("setting_id", [s.id for s in SETTINGS.values()
                                        if s.mechanism.value in ("policy", "policy_dr")])
def test_a_published_policy_setting_is_complete_and_its_page_labels_it_by_the_rule(setting_id):
    """Every published policy tensor is complete (3 x 200 scenes x 5 seeds), and the label
    docs/policy_settings.md gives it is the noise-aware rule applied to the frozen tensor, with
    the paper's bar beside it."""
    from benchmark_data.frozen import load_transfer
    from leaderboard.metrics.discrimination import setting_label

    data = load_transfer(setting_id)
    assert data.is_complete and data.outcomes.shape == (3, 200, 5)
    label = setting_label(data.outcomes, np.asarray(data.scenes.state_ids))
    page = (REPO_ROOT / "docs" / "policy_settings.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith(f"| {setting_id} |"))
    cells = row.split(" | ")
    assert cells[11] == ("yes" if label.discriminates else f"no: {label.reason}"), row
    assert cells[12] == ("met" if label.paper_discriminates else f"missed: {label.paper_reason}"), row


def test_cli_export_of_the_frozen_setting(tmp_path, capsys):
    from expaudit.cli import main

    assert main(["data", "export", "stack-replay-k3-orig", str(tmp_path)]) == 0
    assert "experiences.csv, scenes.csv, outcomes.csv" in capsys.readouterr().out
    scenes = pd.read_csv(tmp_path / "scenes.csv")
    outcomes = pd.read_csv(tmp_path / "outcomes.csv")
    assert len(scenes) == 200 and scenes["state_id"].nunique() == 40
    assert set(outcomes["scene_id"]) <= set(scenes["scene_id"])
    assert main(["data", "export", "nope", str(tmp_path)]) == 2
    assert "unknown setting 'nope'" in capsys.readouterr().err
    assert main(["data", "generate"]) == 2
    assert "give a SETTING, --all or --policies TASK" in capsys.readouterr().err
