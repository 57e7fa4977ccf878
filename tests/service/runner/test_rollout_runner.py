"""The runner on image-policy chunks: per-scene cells with a frozen policy, resumable, refused by name.

A tiny frozen root (two physical states of `stack-orig`, all their renders,
and the K=3 Stack library) gets a tiny `policy` of `stack-e000` (mechanism 2:
agent and wrist views) trained for a few steps on one recorded demonstration
and frozen with its files as `expaudit data train-policies` writes them. What is checked (one journal
record per scene and seed with the policy's provenance, resuming, the
errors) holds for any weights; the episode horizon is cut to a few control
steps so the file runs in seconds.
"""

from __future__ import annotations

import json

import pytest

from expaudit.cli.runner_handlers import policy_options
from service.runner.rollout_runner import ChunkError, RunnerContext, run_chunk
from service.queues.rollout_jobs import Chunk
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids, real_data_available

EXPERIENCE = "stack-e000"
QUERY_SET = "stack-orig"
STATES = ["stack-orig-s00", "stack-orig-s01"]
SCENES = ("stack-orig-s00-d1", "stack-orig-s01-d3")
SHORT = {"stack": 8, "door": 8}


# ------------------------------------------------------------------ options


def test_policy_options_come_from_flags_then_environment_then_defaults():
    assert policy_options(None, None, {}) == ("cpu", 1)
    env = {"EXPAUDIT_POLICY_DEVICE": "cuda", "EXPAUDIT_POLICY_ENVS": "16"}
    assert policy_options(None, None, env) == ("cuda", 16)
    assert policy_options("cuda:1", "4", env) == ("cuda:1", 4)
    assert policy_options("cpu", "1", env) == ("cpu", 1)


@pytest.mark.parametrize("device, envs, environ, message", [
    ("tpu", None, {}, r"--policy-device must be 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
    (None, None, {"EXPAUDIT_POLICY_DEVICE": "gpu"}, r"EXPAUDIT_POLICY_DEVICE must be .* got 'gpu'"),
    (None, "0", {}, r"--policy-envs must be a whole number of at least 1, got '0'"),
    (None, "two", {}, r"--policy-envs must be a whole number .* got 'two'"),
    (None, None, {"EXPAUDIT_POLICY_ENVS": "-3"}, r"EXPAUDIT_POLICY_ENVS must be .* got '-3'"),
])
def test_bad_policy_options_are_refused_by_name(device, envs, environ, message):
    with pytest.raises(ValueError, match=message):
        policy_options(device, envs, environ)


def test_runner_command_refuses_bad_policy_envs_before_serving(tmp_path, capsys, monkeypatch):
    from expaudit.cli.runner import main

    monkeypatch.setenv("EXPAUDIT_POLICY_ENVS", "0")
    assert main(["--redis-url", "redis://127.0.0.1:1/0", "--frozen-root", str(tmp_path)]) == 2
    assert "EXPAUDIT_POLICY_ENVS must be a whole number of at least 1, got '0'" in \
        capsys.readouterr().err


# ------------------------------------------------------------------ chunks


needs_data = pytest.mark.skipif(not real_data_available(), reason="frozen data not built")


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    """A tiny frozen root with a trained (a few steps) `policy` of stack-e000 and no `policy_dr`."""
    pytest.importorskip("robosuite")
    pytest.importorskip("torch")
    pytest.importorskip("robomimic")
    import torch

    from benchmark_data.generation.policies import experience_scene
    from benchmark_data.policy_files import policy_dir
    from simulator.policy_recipe import train_recipe
    from simulator.stack_policy_demos import plan_demos, record_demo
    from simulator.stack_sim import StackSim
    from simulator.wrist_camera import DualCamera
    from tests.support.policy_training import TINY, freeze

    root = tmp_path_factory.mktemp("frozen")
    copy_library(root, experience_ids(3))  # the K=3 library, so its setting's tensor loads
    copy_query_set(root, QUERY_SET, STATES)
    base, style = experience_scene("stack", EXPERIENCE, root)
    sim = StackSim()
    camera = DualCamera(sim, task="stack", size=TINY.image_size)
    threads = torch.get_num_threads()
    try:
        demo, _ = record_demo(sim, camera, plan_demos(EXPERIENCE, base, 1, False)[0], style,
                              EXPERIENCE)
        policy, curves = train_recipe("stack", [demo], TINY)
    finally:
        camera.close()
        torch.set_num_threads(threads)
    freeze(policy, policy_dir("policy", EXPERIENCE, root), {
        "task": "stack", "mechanism": "policy", "experience_id": EXPERIENCE, "n_demos": 1,
        "curve": [{"step": s, "loss": loss} for s, loss in curves["cloning"]]})
    return root


@pytest.fixture
def short_episodes(monkeypatch):
    import simulator.policy_rollout

    monkeypatch.setattr(simulator.policy_rollout, "HORIZON", SHORT)


def _journal(root, mechanism: str = "policy") -> list[dict]:
    path = root / "cells" / f"{mechanism}__{QUERY_SET}.journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.sim
@needs_data
@pytest.mark.usefixtures("short_episodes")
def test_a_policy_chunk_stores_one_cell_per_scene_and_seed_and_resumes(frozen):
    import torch

    from benchmark_data.frozen import load_transfer
    from benchmark_data.policy_files import policy_dir
    from simulator.provenance import policy_code_version

    context = RunnerContext(frozen, frozen / "cells")
    threads = torch.get_num_threads()
    try:
        partial = Chunk("policy", QUERY_SET, EXPERIENCE, SCENES[:1], (0,))
        whole = Chunk("policy", QUERY_SET, EXPERIENCE, SCENES, (0, 1))
        assert run_chunk(context, partial) == (1, 0)
        assert run_chunk(context, whole) == (3, 1)  # (scene 0, seed 0) is stored: resumed
        records = _journal(frozen)
        assert run_chunk(context, whole) == (0, 4)  # everything stored: nothing runs
    finally:
        torch.set_num_threads(threads)
        for runner in context._policy_executors.values():  # free the GL contexts while they are valid
            runner.close()
    assert _journal(frozen) == records
    keys = [(r["mechanism"], r["experience_id"], r["state_id"], r["seed"]) for r in records]
    assert sorted(keys) == sorted(("policy", EXPERIENCE, s, seed)
                                  for s in SCENES for seed in (0, 1))
    version = policy_code_version(str(policy_dir("policy", EXPERIENCE, frozen)))
    for record in records:
        assert record["code_version"] == version
        packages = json.loads(record["packages"])
        assert packages["device"] == "cpu" and "torch" in packages and "robomimic" in packages
        assert record["success"] in (0, 1) and record["state_hash"] and record["final_hash"]
    # the cells land in the setting's tensor on their own scenes, not on the state's other renders
    data = load_transfer("stack-policy-k3-orig", frozen)
    filled = {(data.experience_ids[i], data.scenes.scene_ids[q], s)
              for i, q, s in zip(*(data.outcomes >= 0).nonzero())}
    assert filled == {(EXPERIENCE, scene, seed) for scene in SCENES for seed in (0, 1)}


@pytest.mark.sim
@needs_data
@pytest.mark.usefixtures("short_episodes")
def test_a_runner_with_lockstep_environments_stores_every_cell_of_the_chunk(frozen, tmp_path):
    import shutil

    import torch

    root = tmp_path / "frozen"
    shutil.copytree(frozen, root, ignore=shutil.ignore_patterns("cells"))
    context = RunnerContext(root, root / "cells", policy_envs=2)
    threads = torch.get_num_threads()
    try:
        chunk = Chunk("policy", QUERY_SET, EXPERIENCE, SCENES, (0, 1, 2))
        assert run_chunk(context, chunk) == (6, 0)
        (runner,) = context._policy_executors.values()
        assert (runner.envs, [len(sims) for sims, _ in runner._envs.values()]) == (2, [2])
    finally:
        torch.set_num_threads(threads)
        for runner in context._policy_executors.values():
            runner.close()
    records = _journal(root)
    assert sorted((r["state_id"], r["seed"]) for r in records) == sorted(
        (s, seed) for s in SCENES for seed in (0, 1, 2))


@pytest.mark.parametrize("chunk, message", [
    pytest.param(Chunk("policy", QUERY_SET, EXPERIENCE, (SCENES[0], "stack-orig-s07-d0"), (0,)),
                 r"scene_id 'stack-orig-s07-d0' is not in query set 'stack-orig'", id="unknown-scene"),
    pytest.param(Chunk("policy", QUERY_SET, EXPERIENCE, ("stack-orig-s00",), (0,)),
                 r"scene_id 'stack-orig-s00' is not in query set", id="state-id-for-scene-id"),
    pytest.param(Chunk("policy_dr", QUERY_SET, EXPERIENCE, SCENES, (0,)),
                 r"no trained policy_dr policy for experience_id 'stack-e000'", id="untrained-policy"),
    pytest.param(Chunk("policy", QUERY_SET, "stack-e999", SCENES, (0,)),
                 r"experience_id 'stack-e999' is not in the library", id="unknown-experience"),
    pytest.param(Chunk("policy", "stack-nowhere", EXPERIENCE, SCENES, (0,)),
                 r"query_set 'stack-nowhere' is not one of", id="unknown-query-set"),
    pytest.param(Chunk("diffusion", QUERY_SET, EXPERIENCE, SCENES, (0,)),
                 r"mechanism 'diffusion' is not one of \['replay', 'policy', 'policy_dr'\]",
                 id="unknown-mechanism"),
])
@pytest.mark.sim
@needs_data
def test_a_policy_chunk_the_runner_cannot_execute_is_refused_by_name(frozen, chunk, message):
    before = _journal(frozen, chunk.mechanism)
    with pytest.raises(ChunkError, match=message):
        run_chunk(RunnerContext(frozen, frozen / "cells"), chunk)
    assert _journal(frozen, chunk.mechanism) == before


@pytest.mark.sim
@needs_data
@pytest.mark.usefixtures("short_episodes")
def test_evaluate_policy_counts_episodes_by_layout_level(frozen, capsys):
    from benchmark_data.generation.policies import evaluate_policy
    from expaudit.cli import main

    counts = evaluate_policy("policy", EXPERIENCE, QUERY_SET, draw=2, limit=3, root=frozen)
    assert sum(n for _, n in counts.values()) == 3
    assert set(counts) <= {f"level {lv}" for lv in range(4)}
    assert all(0 <= s <= n for s, n in counts.values())
    assert evaluate_policy("policy", EXPERIENCE, QUERY_SET, draw=2, limit=3, root=frozen) == counts

    assert main(["data", "evaluate-policy", "policy_dr", EXPERIENCE, "--on", QUERY_SET,
                 "--root", str(frozen)]) == 2
    assert "policy_dr policy of 'stack-e000'" in capsys.readouterr().err
    assert main(["data", "evaluate-policy", "policy", EXPERIENCE, "--on", QUERY_SET, "--draw", "7",
                 "--root", str(frozen)]) == 2
    assert "draw must be 0-4, got 7" in capsys.readouterr().err
    assert main(["data", "evaluate-policy", "policy", EXPERIENCE, "--on", "door-orig",
                 "--root", str(frozen)]) == 2
    err = capsys.readouterr().err
    assert "--on: stack has no query set 'door-orig'" in err and "Traceback" not in err
