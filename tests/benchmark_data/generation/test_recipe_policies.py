"""Policies of mechanism 2 (docs/policy_protocol.md): gates judged exactly at their bars, and the
whole training path at small scale, resumed, frozen, run as a cell and verified.

The small run is the real code with tiny numbers: two recorded demonstrations,
a few training steps, one own layout and one validation state under its five
draws, episodes cut to a few control steps. What is checked (the frozen files
and their record, resuming without redoing a phase, a cell of the frozen policy
with its mechanism-2 code version, its re-execution) holds for any weights.
"""

from __future__ import annotations

import json

import pytest

from benchmark_data.generation.recipe_gates import judge_gates
from expaudit.errors import InvalidInput
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids, real_data_available
from tests.support.paths import REPO_ROOT

EXPERIENCE = "stack-e000"
QUERY_SET = "stack-orig"
STATES = ["stack-orig-s00"]


# ------------------------------------------------------------------ gates


def test_policy_gates_pass_exactly_at_their_bars_and_fail_one_episode_below():
    at = judge_gates("policy", {"own": [16, 20], "draw 0": [20, 40], "draws 1-4": [32, 160]})
    assert {name: (g["value"], g["n"], g["passed"]) for name, g in at.items()} == {
        "own": (0.8, 20, True), "draw 0": (0.5, 40, True), "draws 1-4": (0.2, 160, True)}
    below = judge_gates("policy", {"own": [15, 20], "draw 0": [19, 40], "draws 1-4": [31, 160]})
    assert [g["passed"] for g in below.values()] == [False, False, False]


def test_a_dr_policy_is_judged_on_its_gap_between_draw_0_and_the_perturbed_draws_either_way():
    at = judge_gates("policy_dr", {"own": [20, 20], "draw 0": [36, 40], "draws 1-4": [128, 160]})
    assert set(at) == {"own", "draw gap"}
    assert (at["draw gap"]["value"], at["draw gap"]["n"], at["draw gap"]["passed"]) == (0.1, 200, True)
    wide = judge_gates("policy_dr", {"own": [20, 20], "draw 0": [36, 40], "draws 1-4": [127, 160]})
    assert (wide["draw gap"]["value"], wide["draw gap"]["passed"]) == (0.1063, False)
    above = judge_gates("policy_dr", {"own": [20, 20], "draw 0": [28, 40], "draws 1-4": [130, 160]})
    assert (above["draw gap"]["value"], above["draw gap"]["passed"]) == (0.1125, False)


# ------------------------------------------------------------------ the training path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny root (K=3 Stack library, one stack-orig state) with a small mechanism-2 `policy`
    of stack-e000, and its work folder and log."""
    pytest.importorskip("robosuite")
    pytest.importorskip("robomimic")
    if not real_data_available():
        pytest.skip("frozen data not built")
    import simulator.policy_rollout
    import torch

    from benchmark_data.generation.recipe_policies import recipe_spec, train_recipe_policy

    root = tmp_path_factory.mktemp("frozen")
    copy_library(root, experience_ids(3))
    copy_query_set(root, QUERY_SET, STATES)
    workdir = tmp_path_factory.mktemp("work") / f"{EXPERIENCE}-policy"
    spec = recipe_spec(pretrain_steps=3, train_steps=3, pretrain_batch=4, batch_size=2, hidden_dim=16,
                       crops_per_frame=2)
    horizon = simulator.policy_rollout.HORIZON
    simulator.policy_rollout.HORIZON = {"stack": 8, "door": 8}
    threads = torch.get_num_threads()
    lines: list[str] = []
    try:
        out = train_recipe_policy("stack", "policy", EXPERIENCE, workdir, root=root, library_root=root,
                                  n_demos=2, spec=spec, own=1, states=1, chunk=3, log=lines.append)
    finally:
        simulator.policy_rollout.HORIZON = horizon
        torch.set_num_threads(threads)
    return root, workdir, out, lines, spec


@pytest.mark.sim
def test_the_frozen_policy_records_its_demonstrations_training_and_gates(trained):
    import hashlib

    from benchmark_data.generation.recipe_policies import training_sources_sha256
    from simulator.provenance import policy_code_version, policy_mechanism_of

    root, _, out, _, spec = trained
    record = json.loads((out / "training.json").read_text())
    assert (record["task"], record["mechanism"], record["experience_id"], record["n_demos"]) == (
        "stack", "policy", EXPERIENCE, 2)
    assert len(record["demos"]) == 2 and record["tries"] >= 2
    assert record["validation"]["query_set"] == "stack-val" and record["validation"]["seed"] == 0
    groups = record["validation"]["groups"]
    assert {k: v[1] for k, v in groups.items()} == {"own": 1, "draw 0": 1, "draws 1-4": 4}
    assert set(record["gates"]) == {"own", "draw 0", "draws 1-4"}
    assert record["gates"]["draws 1-4"]["value"] == groups["draws 1-4"][0] / 4
    assert record["gates_passed"] == all(g["passed"] for g in record["gates"].values())
    assert set(record["curves"]) == {"agentview", "eye_in_hand", "cloning"}
    assert record["curves"]["cloning"][-1]["step"] == spec.train_steps
    assert record["weights_sha256"] == hashlib.sha256((out / "weights.pt").read_bytes()).hexdigest()
    assert policy_mechanism_of(str(out)) == 2
    assert record["code_version"] == policy_code_version(str(out))
    assert json.loads((out / "spec.json").read_text())["crop_size"] == 58
    assert record["trained_with"] == record["frozen_with"] == {
        "training_sources_sha256": training_sources_sha256()}
    distances = record["validation"]["nearest_demo_m"]
    assert len(distances) == 40 and all(d > 0 for d in distances.values())  # no demo on a state


@pytest.mark.sim
def test_a_second_run_resumes_every_phase_and_writes_the_same_record(trained):
    import torch

    from benchmark_data.generation.recipe_policies import train_recipe_policy

    root, workdir, out, _, spec = trained
    before = (out / "training.json").read_text()
    kept = {name: (workdir / name).read_bytes() for name in ("recipe.episodes.jsonl", "curves.json",
                                                             "policy/weights.pt", "work.json")}
    chunks = sorted(p.name for p in (workdir / "demos").iterdir())
    lines: list[str] = []
    threads = torch.get_num_threads()
    try:
        again = train_recipe_policy("stack", "policy", EXPERIENCE, workdir, root=root, library_root=root,
                                    n_demos=2, spec=spec, own=1, states=1, chunk=3, log=lines.append)
    finally:
        torch.set_num_threads(threads)
    assert again == out
    assert sorted(p.name for p in (workdir / "demos").iterdir()) == chunks
    assert not [line for line in lines if line.startswith(("demos chunk", "training:"))]
    assert (out / "training.json").read_text() == before
    assert {name: (workdir / name).read_bytes() for name in kept} == kept  # no episode run twice


@pytest.mark.sim
def test_a_cell_of_the_policy_runs_with_both_cameras_and_verifies(trained):
    import simulator.policy_rollout
    import torch

    from benchmark_data.generation.verify import verify_policy_sample
    from simulator.provenance import SOURCES_KEY, policy_code_version, policy_sources_sha256
    from service.queues.rollout_jobs import Chunk
    from service.runner.rollout_runner import RunnerContext, run_chunk

    root, _, out, _, _ = trained
    horizon = simulator.policy_rollout.HORIZON
    simulator.policy_rollout.HORIZON = {"stack": 8, "door": 8}
    threads = torch.get_num_threads()
    context = RunnerContext(root, root / "cells")  # the cells verify_policy_sample reads
    try:
        assert run_chunk(context, Chunk("policy", QUERY_SET, EXPERIENCE, ("stack-orig-s00-d2",), (0,))) == (1, 0)
        report = verify_policy_sample(1, root=root)
    finally:
        for policy_executor in context._policy_executors.values():
            policy_executor.close()
        simulator.policy_rollout.HORIZON = horizon
        torch.set_num_threads(threads)
    (record,) = [json.loads(line) for line in
                 (root / "cells" / f"policy__{QUERY_SET}.journal.jsonl").read_text().splitlines()]
    assert record["code_version"] == policy_code_version(str(out))
    assert record["code_version"].startswith("policy/2+weights:")
    assert json.loads(record["packages"])[SOURCES_KEY] == policy_sources_sha256()
    assert (report.n_checked, report.mismatches) == (1, ())
    renderer = json.loads(record["packages"])["renderer"]  # what drew the pixels the policy read
    assert " / " in renderer and "unknown" not in renderer


@pytest.mark.sim
def test_cells_of_staged_policies_are_stored_in_the_staging_root_only(trained, tmp_path):
    """`run_cells(out=...)`: scenes from the published root, policies and cells in the staging one."""
    import shutil

    import simulator.policy_rollout
    import torch

    from benchmark_data.cells import load_cells
    from benchmark_data.generation.rollouts import run_cells
    from benchmark_data.policy_files import policy_dir
    from simulator.executor import Cell

    root = tmp_path / "published"
    shutil.copytree(trained[0], root)
    staging = tmp_path / "staging"
    shutil.move(policy_dir("policy", EXPERIENCE, root), policy_dir("policy", EXPERIENCE, staging))
    shutil.rmtree(root / "policies")  # the published root keeps no policy at all
    published_before = len(load_cells("policy", QUERY_SET, root))
    horizon = simulator.policy_rollout.HORIZON
    simulator.policy_rollout.HORIZON = {"stack": 8, "door": 8}
    threads = torch.get_num_threads()
    cell = Cell("policy", QUERY_SET, EXPERIENCE, "stack-orig-s00-d4", 3)
    try:
        with pytest.raises(InvalidInput, match="no cell of the new policies before the go / no-go says go"):
            run_cells([cell], workers=1, root=root, out=staging)
        assert run_cells([cell], workers=1, root=root, out=staging, require_go=False) == 1
    finally:
        simulator.policy_rollout.HORIZON = horizon
        torch.set_num_threads(threads)
    staged = load_cells("policy", QUERY_SET, staging)
    assert list(zip(staged.state_id, staged.seed)) == [("stack-orig-s00-d4", 3)]
    assert len(load_cells("policy", QUERY_SET, root)) == published_before


def test_the_gates_script_tabulates_each_policy_and_waits_for_all_three_stack_policies(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = REPO_ROOT / "scripts" / "policy_gates.py"
    spec = importlib.util.spec_from_file_location("policy_gates", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    groups = {"stack-e000": {"own": [19, 20], "draw 0": [30, 40], "draws 1-4": [50, 160]},
              "stack-e001": {"own": [15, 20], "draw 0": [10, 40], "draws 1-4": [10, 160]}}
    for eid, g in groups.items():
        out = tmp_path / "policies" / "policy" / eid
        out.mkdir(parents=True)
        (out / "training.json").write_text(json.dumps({
            "task": "stack", "mechanism": "policy", "experience_id": eid, "n_demos": 240, "tries": 250,
            "train_wall_s": 1200, "validation": {"groups": g}, "gates": judge_gates("policy", g)}))
    assert script.main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| stack-e000 Policy | 19/20 | 30/40 | 50/160 | all pass | 240 (250) | 20 |" in printed
    assert "| stack-e001 Policy | 15/20 | 10/40 | 10/160 | fails: own, draw 0, draws 1-4 | 240 (250) | 20 |" in printed
    # (30 + 50) / 200 = 0.4 and (10 + 10) / 200 = 0.1: mean 0.25, with one of the three missing
    assert ("validation random success of the Stack Policy policies 0.250 (stack-e000 0.400, "
            "stack-e001 0.100) against 0.2: not yet decided (only 2 of 3 trained)") in printed


def test_a_gate_measured_on_fewer_episodes_than_the_protocol_asks_never_passes():
    small = judge_gates("policy", {"own": [5, 5], "draw 0": [4, 4], "draws 1-4": [16, 16]})
    assert [(g["value"], g["passed"]) for g in small.values()] == [(1.0, False)] * 3
    dr = judge_gates("policy_dr", {"own": [20, 20], "draw 0": [10, 10], "draws 1-4": [40, 40]})
    assert (dr["draw gap"]["value"], dr["draw gap"]["n"], dr["draw gap"]["passed"]) == (0.0, 50, False)


@pytest.mark.sim
def test_a_work_folder_refuses_a_run_with_other_settings_or_another_spec(trained):
    from benchmark_data.generation.recipe_policies import open_work, train, work_record

    _, workdir, _, _, spec = trained
    record = json.loads((workdir / "work.json").read_text())
    with pytest.raises(InvalidInput, match=r"was begun with n_demos = 2, not 3: give another --workdir"):
        open_work(workdir, {**record, "n_demos": 3})
    with pytest.raises(InvalidInput, match=r"was begun with mechanism = 'policy', not 'policy_dr'"):
        open_work(workdir, work_record("stack", EXPERIENCE, "policy_dr", 2, 3, spec))
    with pytest.raises(InvalidInput, match=r"trained with another spec \(crop_size, train_steps differ\)"):
        train("stack", None, spec.__class__(**{**vars(spec), "crop_size": 0, "train_steps": 4}), workdir)


def test_gate_episodes_of_another_noise_seed_are_refused(tmp_path):
    from benchmark_data.generation.recipe_gates import read_episodes

    path = tmp_path / "recipe.episodes.jsonl"
    path.write_text('{"scene_id": "a", "success": true}\n{"scene_id": "b", "seed": 1, "success": false}\n')
    with pytest.raises(InvalidInput, match=r"episode b has seed 1, not 0"):
        read_episodes(path, 0)
    assert sorted(read_episodes(path, 1)) == ["a", "b"]  # a row without its seed counts as the asked one
