"""The BC-RNN image policy: training determinism, save/load round trip, batches, the torchvision stand-in.

Tiny networks on synthetic demonstrations, so the whole file runs in seconds
on one core; what is checked (bit-identical weights and actions) does not
depend on the network's size.
"""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("robomimic")

from simulator.policy_model import (  # noqa: E402
    ACTION_DIM,
    IMAGE_KEY,
    SEQUENCE_LENGTH,
    Demo,
    PolicyActor,
    PolicySpec,
    build_policy,
    load_policy,
    sample_batch,
    save_policy,
    state_dict,
    train,
)
from tests.support.paths import REPO_ROOT
from tests.support.policy_training import TINY, synthetic_demos, weights_digest

REPO = REPO_ROOT


def assert_state_dicts_equal(a: dict, b: dict) -> None:
    import torch

    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert torch.equal(a[name], b[name]), name


def rollout_actions(actor: PolicyActor, demo: Demo) -> np.ndarray:
    """Actions for one demonstration's observations in order (crosses the RNN horizon)."""
    actor.reset()
    return np.concatenate([actor.act(demo.images[t:t + 1], demo.eef_pos[t:t + 1],
                                     demo.gripper_qpos[t:t + 1]) for t in range(len(demo))])


@pytest.fixture(scope="module")
def demos():
    return synthetic_demos()


@pytest.fixture(scope="module")
def trained(demos):
    import torch

    threads = torch.get_num_threads()
    algo, curve = train(demos, TINY)
    torch.set_num_threads(threads)  # train pins one intra-op thread; leave the process as found
    return algo, curve


def test_spec_round_trips_through_json():
    spec = PolicySpec(hidden_dim=32, seed=5, learning_rate=3e-4)
    assert PolicySpec.from_json(spec.to_json()) == spec


def test_sample_batch_shapes_and_padding(demos):
    batch = sample_batch(demos, np.random.default_rng(3), 6)
    assert batch["obs"][IMAGE_KEY].shape == (6, SEQUENCE_LENGTH, 32, 32, 3)
    assert batch["obs"][IMAGE_KEY].dtype == np.uint8
    assert batch["obs"]["robot0_eef_pos"].shape == (6, SEQUENCE_LENGTH, 3)
    assert batch["obs"]["robot0_gripper_qpos"].shape == (6, SEQUENCE_LENGTH, 2)
    assert batch["actions"].shape == (6, SEQUENCE_LENGTH, ACTION_DIM)
    again = sample_batch(demos, np.random.default_rng(3), 6)
    np.testing.assert_array_equal(again["actions"], batch["actions"])
    # a sequence that starts on a demonstration's last step repeats that step
    last = Demo(demos[1].images[-1:], demos[1].eef_pos[-1:], demos[1].gripper_qpos[-1:], demos[1].actions[-1:])
    padded = sample_batch([last], np.random.default_rng(0), 1)
    np.testing.assert_array_equal(padded["actions"][0], np.repeat(demos[1].actions[-1:], SEQUENCE_LENGTH, 0))


def test_training_runs_and_changes_the_weights(demos, trained):
    algo, curve = trained
    assert [step for step, _ in curve] == [TINY.train_steps]
    assert np.isfinite(curve[0][1])
    assert not algo.nets.training  # handed back in eval mode, ready to act
    fresh = build_policy(TINY)
    assert weights_digest(fresh) != weights_digest(algo)
    actions = rollout_actions(PolicyActor(algo), demos[0])
    assert actions.shape == (len(demos[0]), ACTION_DIM) and np.all(np.isfinite(actions))


def test_save_and_load_give_identical_weights_and_actions(tmp_path, demos, trained):
    algo, _ = trained
    path = save_policy(algo, TINY, tmp_path / "policy")
    assert path == tmp_path / "policy" / "weights.pt"
    assert sorted(p.name for p in path.parent.iterdir()) == ["spec.json", "weights.pt"]
    loaded, spec = load_policy(tmp_path / "policy")
    assert spec == TINY
    assert not loaded.nets.training
    assert_state_dicts_equal(state_dict(algo), state_dict(loaded))
    for demo in demos:  # 14 and 9 steps: across and within the RNN horizon
        mine, theirs = rollout_actions(PolicyActor(algo), demo), rollout_actions(PolicyActor(loaded), demo)
        assert np.array_equal(mine, theirs)


def test_training_stores_the_demonstrations_low_dim_statistics(tmp_path, demos, trained):
    """The standardization the network was trained with travels in weights.pt and is applied when acting."""
    algo, _ = trained
    eef = np.concatenate([d.eef_pos for d in demos])
    mean, std = algo.low_dim_stats["robot0_eef_pos"]
    np.testing.assert_allclose(mean, eef.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(std, eef.std(axis=0), rtol=1e-5)
    weights = state_dict(algo)
    assert "low_dim_stats.robot0_gripper_qpos.std" in weights
    loaded, _ = load_policy(Path(save_policy(algo, TINY, tmp_path / "p")).parent)
    for key in ("robot0_eef_pos", "robot0_gripper_qpos"):
        for mine, theirs in zip(algo.low_dim_stats[key], loaded.low_dim_stats[key]):
            np.testing.assert_array_equal(mine, theirs)
    # the same network without its statistics acts differently: the statistics are really used
    loaded.low_dim_stats = build_policy(TINY).low_dim_stats
    assert not np.array_equal(rollout_actions(PolicyActor(algo), demos[0]),
                              rollout_actions(PolicyActor(loaded), demos[0]))


def test_a_policy_stored_without_statistics_loads_with_identity_normalization(tmp_path):
    import torch

    fresh = build_policy(TINY)
    save_policy(fresh, TINY, tmp_path / "p")
    weights = torch.load(tmp_path / "p" / "weights.pt", weights_only=True)
    torch.save({k: v for k, v in weights.items() if not k.startswith("low_dim_stats.")},
               tmp_path / "p" / "weights.pt")
    loaded, _ = load_policy(tmp_path / "p")
    mean, std = loaded.low_dim_stats["robot0_eef_pos"]
    assert not mean.any() and (std == 1).all()


def test_loaded_weights_differ_from_a_fresh_build(tmp_path, trained):
    """load_policy really replaces the seeded initial weights (the round trip above could not
    tell a stored policy from a rebuilt untrained one otherwise)."""
    algo, _ = trained
    save_policy(algo, TINY, tmp_path / "p")
    loaded, _ = load_policy(tmp_path / "p")
    assert weights_digest(loaded) == weights_digest(algo) != weights_digest(build_policy(TINY))


def test_actor_reset_restarts_the_recurrent_state(demos, trained):
    actor = PolicyActor(trained[0])
    first = rollout_actions(actor, demos[0])
    assert np.array_equal(rollout_actions(actor, demos[0]), first)
    # without a reset the RNN carries its state into the next step: a different action
    actor.reset()
    actor.act(demos[0].images[:1], demos[0].eef_pos[:1], demos[0].gripper_qpos[:1])
    carried = actor.act(demos[0].images[:1], demos[0].eef_pos[:1], demos[0].gripper_qpos[:1])
    assert not np.array_equal(carried, first[:1])


def test_training_twice_gives_identical_weights(demos, trained):
    import torch

    algo, curve = trained
    threads = torch.get_num_threads()
    again, curve_again = train(demos, TINY)
    torch.set_num_threads(threads)
    assert curve_again == curve
    assert_state_dicts_equal(state_dict(algo), state_dict(again))
    other_seed, _ = train(demos, replace(TINY, seed=1))
    torch.set_num_threads(threads)
    assert weights_digest(other_seed) != weights_digest(algo)


TRAIN_DIGEST = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.support.policy_training import TINY, synthetic_demos, weights_digest
from simulator.policy_model import train
algo, _ = train(synthetic_demos(), TINY)
print("digest", weights_digest(algo))
"""


def test_training_does_not_depend_on_the_hash_seed(trained):
    """robomimic keeps observation keys in sets in places; the network's module and feature
    order must not follow PYTHONHASHSEED. A child process with another hash seed trains the
    same weights."""
    parent = os.environ.get("PYTHONHASHSEED")
    child = "2" if parent == "1" else "1"
    env = {**os.environ, "PYTHONHASHSEED": child, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", TRAIN_DIGEST, str(REPO)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("digest ")][-1]
    assert line.split()[1] == weights_digest(trained[0])


def test_torchvision_placeholder_raises_a_clear_error():
    from simulator.robomimic_compat import (TorchvisionUnavailableError, import_robomimic,
                                            torchvision_is_real)

    if torchvision_is_real():
        pytest.skip("a working torchvision is installed; the placeholder is not used")
    rm = import_robomimic()
    assert callable(rm.algo_factory) and callable(rm.config_factory)
    import torchvision
    from torchvision.transforms import functional  # the import forms robomimic uses resolve

    assert not torchvision_is_real()
    with pytest.raises(TorchvisionUnavailableError, match="torchvision"):
        torchvision.transforms.Compose([])
    with pytest.raises(TorchvisionUnavailableError, match=r"torchvision\.transforms\.functional\.resize"):
        functional.resize(None, 8)
    with pytest.raises(TorchvisionUnavailableError, match="torchvision"):
        torchvision.models.resnet18()


def test_encoder_pretraining_teaches_the_encoder_and_freezing_keeps_it_through_cloning():
    import torch

    from simulator.policy_model import visual_core

    rng = np.random.default_rng(3)
    demos = [replace(d, object_state=np.column_stack([rng.normal(size=len(d)), np.zeros(len(d))]))
             for d in synthetic_demos()]  # the constant column carries nothing and is dropped
    spec = replace(TINY, pretrain_steps=4, pretrain_batch=4, train_steps=3, freeze_encoder=True)
    initial = {k: v.clone() for k, v in visual_core(build_policy(spec)).state_dict().items()}

    seen = []
    algo, curve = train(demos, spec, log=lambda step, loss: seen.append(step))
    assert [step for step, _ in curve][:1] == [-4] and seen[0] == -4  # pretraining logged first
    trained = visual_core(algo).state_dict()
    assert any(not torch.equal(initial[k], trained[k]) for k in initial)

    pretrained_only, _ = train(demos, replace(spec, train_steps=1))
    after_one_step = visual_core(pretrained_only).state_dict()
    for name in trained:  # behaviour cloning leaves a frozen encoder exactly as pretraining left it
        assert torch.equal(trained[name], after_one_step[name]), name

    unfrozen, _ = train(demos, replace(spec, freeze_encoder=False))
    assert any(not torch.equal(trained[k], visual_core(unfrozen).state_dict()[k]) for k in trained)
