"""The frozen policies' training data regenerate from the library (real MuJoCo, real rendering).

Each policy's training.json stores the plans of the demonstrations it kept,
how many it tried and how many frames they hold; recording them again must
give the same, or `expaudit data train-policies` could no longer regenerate
the frozen weights. These depend only on the physics (pinned BLAS kernel),
not on the machine's software renderer, whose rounding the images follow
(docs/data.md, "What reproduces where"); records that carry the hash of the
camera-free arrays (`demos_low_dim_sha256`) are held to it too. The smallest
frozen policy keeps the file fast.
"""

from __future__ import annotations

import json

import pytest

from benchmark_data.generation.policies import demos_sha256, record_training_demos
from benchmark_data.policy_files import is_trained, policy_dir, read_training

MECHANISM, EXPERIENCE = "policy", "stack-e002"


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.skipif(not is_trained(MECHANISM, EXPERIENCE), reason="frozen policy not trained")
def test_frozen_stack_policy_demonstrations_regenerate():
    pytest.importorskip("robosuite")
    from runner.policy_model import PolicySpec

    record = read_training(MECHANISM, EXPERIENCE)
    spec = PolicySpec.from_json((policy_dir(MECHANISM, EXPERIENCE) / "spec.json").read_text())
    demos, plans, tries = record_training_demos(record["task"], MECHANISM, EXPERIENCE,
                                                record["n_demos"], spec.image_size)
    assert tries == record["tries"]
    kept = [{"index": p.index, "layout": p.layout.to_dict(), "draw_key": p.draw_key, "draw": p.draw}
            for p in plans]
    assert json.loads(json.dumps(kept)) == record["demos"]
    assert sum(len(d) for d in demos) == record["frames"]
    if "demos_low_dim_sha256" in record:
        assert demos_sha256(demos, images=False) == record["demos_low_dim_sha256"]


def test_the_low_dim_hash_leaves_out_only_the_renders():
    import numpy as np

    from runner.policy_model import Demo

    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, size=(4, 8, 8, 3), dtype=np.uint8)
    demo = Demo(images=images, eef_pos=rng.normal(size=(4, 3)), gripper_qpos=rng.normal(size=(4, 2)),
                actions=rng.normal(size=(4, 7)))
    rendered_elsewhere = Demo(images=images ^ 1, eef_pos=demo.eef_pos, gripper_qpos=demo.gripper_qpos,
                              actions=demo.actions)
    moved = Demo(images=images, eef_pos=demo.eef_pos + 1e-9, gripper_qpos=demo.gripper_qpos,
                 actions=demo.actions)
    assert demos_sha256([demo], images=False) == demos_sha256([rendered_elsewhere], images=False)
    assert demos_sha256([demo]) != demos_sha256([rendered_elsewhere])
    assert demos_sha256([demo], images=False) != demos_sha256([moved], images=False)
