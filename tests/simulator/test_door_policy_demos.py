"""Door policy demonstrations: plans are pure and well-drawn, a recorded demo is consistent (real MuJoCo)."""

import numpy as np
import pytest

from simulator.door_expert import door_stream_draw
from simulator.door_policy_demos import (
    X_SHIFT,
    Y_SHIFT,
    YAW_SHIFT,
    collect_door_demos,
    perturbed_door_layout,
    plan_door_demos,
    record_door_demo,
)
from simulator.door_scenes import DoorLayout

EXPERIENCE = "door-test"


@pytest.fixture(scope="module")
def base_and_style():
    return door_stream_draw(0)


def test_plans_are_a_pure_function_of_experience_and_index(base_and_style):
    base, _ = base_and_style
    a = plan_door_demos(EXPERIENCE, base, 6, randomized=True)
    assert a == plan_door_demos(EXPERIENCE, base, 6, randomized=True)
    assert plan_door_demos(EXPERIENCE, base, 3, randomized=True) == a[:3]
    assert [p.layout for p in plan_door_demos("door-other", base, 6, True)][1:] != [p.layout for p in a][1:]
    assert a[0].layout == base
    assert [p.draw_key for p in a] == [f"train:{EXPERIENCE}:{i}" for i in range(6)]
    assert len({p.layout for p in a}) == 6


def test_draws_follow_randomization(base_and_style):
    base, _ = base_and_style
    assert [p.draw for p in plan_door_demos(EXPERIENCE, base, 10, randomized=True)] == [0, 1, 2, 3, 4] * 2
    assert {p.draw for p in plan_door_demos(EXPERIENCE, base, 10, randomized=False)} == {0}
    same = zip(plan_door_demos(EXPERIENCE, base, 5, True), plan_door_demos(EXPERIENCE, base, 5, False))
    assert all(r.layout == n.layout for r, n in same)


def test_perturbed_layout_moves_only_the_door():
    base = DoorLayout((-0.13, -0.35, -1.7), hinge=0.1, latch=0.2, obstacle=(-0.2, -0.1, 0.03, 0.03, 0.05))
    rng = np.random.default_rng(0)
    for _ in range(50):
        moved = perturbed_door_layout(base, rng)
        assert (moved.hinge, moved.latch, moved.obstacle) == (base.hinge, base.latch, base.obstacle)
        shift = np.subtract(moved.door, base.door)
        assert np.all(np.abs(shift) <= [X_SHIFT, Y_SHIFT, YAW_SHIFT])
        assert np.any(shift != 0)


@pytest.fixture(scope="module")
def sim_and_camera():
    from simulator.door_sim import DoorSim
    from simulator.policy_camera import PolicyCamera

    sim = DoorSim()
    camera = PolicyCamera(sim, task="door")
    yield sim, camera
    camera.close()


def test_recorded_demo_is_consistent_and_labelled_in_range(sim_and_camera, base_and_style):
    sim, camera = sim_and_camera
    base, style = base_and_style
    plan = plan_door_demos(EXPERIENCE, base, 2, randomized=True)[1]
    demo, ok = record_door_demo(sim, camera, plan, style, EXPERIENCE)
    t = len(demo)
    assert t > 50
    assert demo.images.shape == (t, camera.size, camera.size, 3) and demo.images.dtype == np.uint8
    assert demo.eef_pos.shape == (t, 3) and demo.gripper_qpos.shape == (t, 2) and demo.actions.shape == (t, 7)
    assert np.all(np.abs(demo.actions) <= 1.0)
    assert set(np.unique(demo.actions[:, 6])) == {-1.0, 1.0}
    assert demo.images[0].std() > 0 and not np.array_equal(demo.images[0], demo.images[-1])
    assert ok and sim.success()
    again, ok_again = record_door_demo(sim, camera, plan, style, EXPERIENCE)
    assert ok_again and np.array_equal(again.actions, demo.actions)
    assert np.array_equal(again.images, demo.images)


def test_collect_stops_at_the_requested_successes(sim_and_camera, base_and_style):
    sim, camera = sim_and_camera
    base, style = base_and_style
    demos, kept, tries = collect_door_demos(sim, camera, EXPERIENCE, base, style, n_success=1,
                                            randomized=False)
    assert len(demos) == len(kept) == 1 and tries == kept[-1].index + 1
    assert kept[0].draw == 0
