"""A tiny readout image bank beside the published Door policies, for the reference
representations' feature tests: two shards of seeded random 64x64 images (what is checked
holds for any images)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark_data.generation import readout_features as rf
from benchmark_data.paths import FROZEN_ROOT
from benchmark_data.policy_files import is_trained

TASK = "door"
POLICY = rf.policy_representations(TASK)[0]
needs_policies = pytest.mark.skipif(not all(is_trained(*p.split("/")) for p in rf.policy_representations(TASK)),
                                    reason="the published Door policies are not in the frozen data")


def images(seed: int, n: int) -> np.ndarray:
    """`n` seeded random 64x64 RGB images."""
    return np.random.default_rng(seed).integers(0, 256, (n, 64, 64, 3), dtype=np.uint8)


def image_bank(root, shards: dict[str, tuple[list[str], np.ndarray, np.ndarray]], policies: bool = True):
    """A readout bank of TASK under `root` with the given shards {name: (ids, agent, wrist)},
    and (`policies`) the published policies linked in."""
    if policies:
        (root / "policies").mkdir(parents=True)
        for mechanism in ("policy", "policy_dr"):
            (root / "policies" / mechanism).symlink_to(FROZEN_ROOT / "policies" / mechanism)
    bank = rf.bank_dir(TASK, root)
    bank.mkdir(parents=True)
    for name, (ids, agent, wrist) in shards.items():
        np.savez_compressed(bank / name, observation_id=np.array(ids), agentview=agent, wrist=wrist)
    return root


def tiny_bank(root):
    """Two shards (five images, then three) under `root`, the published policies linked."""
    return image_bank(root, {
        "images-00.npz": ([f"a{i}" for i in range(5)], images(1, 5), images(2, 5)),
        "images-01.npz": ([f"b{i}" for i in range(3)], images(3, 3), images(4, 3)),
    })
