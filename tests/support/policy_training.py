"""A tiny policy configuration and synthetic demonstrations: training in seconds, for the
policy model's tests, the backbone trial's and child processes that train the same weights."""

import hashlib

import numpy as np

from simulator.policy_model import ACTION_DIM, Demo, PolicySpec, state_dict


TINY = PolicySpec(train_steps=3, batch_size=2, hidden_dim=16, feature_dim=16, keypoints=8, image_size=32)


def synthetic_demos(size: int = 32, lengths=(14, 9)) -> list[Demo]:
    """Seeded random demonstrations (images, end-effector, fingers, actions in [-1, 1])."""
    rng = np.random.default_rng(11)
    return [Demo(images=rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8),
                 eef_pos=rng.normal(0.0, 0.1, (n, 3)),
                 gripper_qpos=rng.uniform(-0.04, 0.04, (n, 2)),
                 actions=rng.uniform(-1.0, 1.0, (n, ACTION_DIM)))
            for n in lengths]


def weights_digest(algo) -> str:
    """SHA-256 over the state dict's names, dtypes, shapes and bytes, in order."""
    digest = hashlib.sha256()
    for name, tensor in state_dict(algo).items():
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
