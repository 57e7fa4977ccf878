"""Tiny mechanism-2 policies and synthetic demonstrations: built or trained in seconds, for the
tests that need a policy to run, store or encode, and for child processes that train the same
weights."""

import hashlib
import json
from dataclasses import replace

import numpy as np

from simulator.policy_model import ACTION_DIM, Demo
from simulator.policy_recipe import CAMERAS, RecipePolicy, RecipeSpec, _obs_sizes, build_bc_rnn, build_encoder

TINY = RecipeSpec(image_size=32, feature_dim=8, keypoints=4, hidden_dim=16, pretrain_steps=3, pretrain_batch=4,
                  train_steps=4, batch_size=3)


def synthetic_demos(size: int = 32, lengths=(14, 9)) -> list[Demo]:
    """Seeded random demonstrations: side-by-side frames (agent and wrist views), end-effector,
    fingers, actions in [-1, 1] and two cubes' positions."""
    rng = np.random.default_rng(11)
    return [Demo(images=rng.integers(0, 256, (n, size, 2 * size, 3), dtype=np.uint8),
                 eef_pos=rng.normal(0.0, 0.1, (n, 3)),
                 gripper_qpos=rng.uniform(-0.04, 0.04, (n, 2)),
                 actions=rng.uniform(-1.0, 1.0, (n, ACTION_DIM)),
                 object_state=rng.normal(size=(n, 6)))
            for n in lengths]


def untrained_policy(spec: RecipeSpec = TINY, seed: int = 0) -> RecipePolicy:
    """A freshly initialised policy of `spec` (seeded by `seed`), with identity statistics: for
    checks that hold for any weights."""
    import torch

    spec = replace(spec, seed=seed)
    encoders = {}
    for i, cam in enumerate(CAMERAS):
        torch.manual_seed(seed + 10 + i)
        encoders[cam] = build_encoder(spec, cam).eval()
    algo = build_bc_rnn(spec)
    algo.set_eval()
    stats = {key: (np.zeros(n, np.float32), np.ones(n, np.float32)) for key, n in _obs_sizes(spec).items()}
    return RecipePolicy(spec, encoders, algo, stats)


def freeze(policy: RecipePolicy, directory, training: dict) -> str:
    """Write `policy` with the three files of a frozen policy (`training` as its training.json);
    returns the directory."""
    policy.save(directory)
    (directory / "training.json").write_text(json.dumps(training) + "\n")
    return str(directory)


def weights_digest(policy: RecipePolicy) -> str:
    """SHA-256 over the encoders' and the BC-RNN's state dicts (names, dtypes, shapes, bytes), in order."""
    digest = hashlib.sha256()
    parts = [(f"encoder.{cam}", policy.encoders[cam].state_dict()) for cam in CAMERAS]
    for prefix, weights in parts + [("policy", policy.algo.nets.state_dict())]:
        for name, tensor in weights.items():
            digest.update(f"{prefix}.{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
