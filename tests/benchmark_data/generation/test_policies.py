"""The frozen policies' training data regenerate from the library (real MuJoCo, real rendering).

Each policy's training.json stores the plans of the demonstrations it kept
and how many it tried; recording them again must keep and drop the same
plans, or `expaudit data train-policies` could no longer regenerate the
frozen weights. Which plans succeed depends only on the physics (pinned BLAS
kernel), not on the machine's software renderer, whose rounding the images
follow (docs/data.md, "What reproduces where"). The first plans of the
smallest frozen policy keep the file fast.
"""

from __future__ import annotations

import json

import pytest

from benchmark_data.generation.policies import demos_sha256, experience_scene
from benchmark_data.policy_files import is_trained, policy_dir, read_training
from simulator.provenance import policy_mechanism_of

MECHANISM, EXPERIENCE = "policy", "stack-e002"
RECIPE_PLANS = 15
"""Recipe plans re-recorded: stack-e002's first 15 hold one failure (plan 14), dropped alike."""


def _is_recipe_policy() -> bool:
    return (is_trained(MECHANISM, EXPERIENCE)
            and policy_mechanism_of(str(policy_dir(MECHANISM, EXPERIENCE))) == 2)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.skipif(not _is_recipe_policy(), reason="the frozen stack-e002 Policy is not a version-2 policy")
def test_recipe_policy_demonstrations_regenerate_with_their_failures():
    """The first plans of the frozen version-2 policy, recorded again by the recipe's recorder:
    the same plans succeed, the same fail and are dropped, and the kept ones are the record's."""
    pytest.importorskip("robosuite")
    from benchmark_data.generation.recipe_policies import sim_class
    from simulator.demo_recording import record_demo
    from simulator.recipe_demos import demo_task, recipe_plans
    from simulator.wrist_camera import DualCamera

    record = read_training(MECHANISM, EXPERIENCE)
    task = record["task"]
    plans = recipe_plans(task, EXPERIENCE, RECIPE_PLANS, randomized=False)
    _, style = experience_scene(task, EXPERIENCE)
    sim = sim_class(task)()
    camera = DualCamera(sim, task=task)
    try:
        kept = [p for p in plans if record_demo(demo_task(task), sim, camera, p, style, EXPERIENCE)[1]]
    finally:
        camera.close()
    assert len(kept) < len(plans)  # the prefix holds a failure, or the test checks less than it says
    stored = [d for d in record["demos"] if d["index"] < RECIPE_PLANS]
    expected = [{"index": p.index, "layout": p.layout.to_dict(), "draw_key": p.draw_key, "draw": p.draw}
                for p in kept]
    assert stored == json.loads(json.dumps(expected))


def test_the_low_dim_hash_leaves_out_only_the_renders():
    import numpy as np

    from simulator.policy_model import Demo

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
