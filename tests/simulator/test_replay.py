"""Replay: retargeting, the seeded execution noise, determinism per seed."""

import numpy as np
import pytest

from simulator.replay import EPISODE_OFFSET_STD, apply_noise, noise_for, retarget
from simulator.stack_scenes import StackLayout
from simulator.stack_expert import PHASE_GRASP, PHASE_PLACE, PHASE_TRANSPORT, plan_path, sample_style

BASE = StackLayout((0.0, -0.07, 0.1), (0.0, 0.07, 0.0))
QUERY = StackLayout((0.05, -0.02, 0.3), (-0.04, 0.10, 0.2))


@pytest.fixture
def path():
    return plan_path(BASE, sample_style(np.random.default_rng(4)))


def test_retarget_shifts_grasp_by_a_and_place_by_b(path):
    moved = retarget(path, BASE, QUERY)
    closed = np.flatnonzero(path[:, 4] > 0)
    grasp_rows = closed[path[closed, 5] == PHASE_GRASP]
    np.testing.assert_allclose(moved[grasp_rows, :2] - path[grasp_rows, :2], [[0.05, 0.05]] * len(grasp_rows))
    place = path[:, 5] == PHASE_PLACE
    np.testing.assert_allclose(moved[place, :2] - path[place, :2], [[-0.04, 0.03]] * int(place.sum()))
    np.testing.assert_array_equal(moved[:, 2:], path[:, 2:])  # height, yaw, gripper, phase kept
    transport = np.flatnonzero(path[:, 5] == PHASE_TRANSPORT)
    shift = moved[transport, :2] - path[transport, :2]
    np.testing.assert_allclose(shift[-1], [-0.04, 0.03])  # the blend ends on B's shift


def test_retarget_to_own_base_is_identity(path):
    np.testing.assert_array_equal(retarget(path, BASE, BASE), path)


def test_noise_is_a_function_of_the_cell():
    a = noise_for(3, "stack-e001", "stack-orig-s04", 100)
    b = noise_for(3, "stack-e001", "stack-orig-s04", 100)
    c = noise_for(4, "stack-e001", "stack-orig-s04", 100)
    np.testing.assert_array_equal(a.jitter, b.jitter)
    np.testing.assert_array_equal(a.offset, b.offset)
    assert not np.array_equal(a.offset, c.offset)
    offsets = np.array([noise_for(s, "e", "q", 1).offset for s in range(400)]).reshape(-1)
    assert abs(offsets.std() - EPISODE_OFFSET_STD) < 0.2 * EPISODE_OFFSET_STD


def test_grip_delay_shifts_gripper_commands(path):
    noise = noise_for(0, "e", "q", len(path))
    delayed = apply_noise(path, type(noise)(noise.offset, noise.jitter, 2))
    np.testing.assert_array_equal(delayed[2:, 4], path[:-2, 4])


@pytest.mark.sim
def test_replay_is_deterministic_per_seed():
    from simulator.replay import replay_episode
    from simulator.recording import record
    from simulator.stack_sim import StackSim

    sim = StackSim()
    rec = record(sim, 1)
    finals = {}
    for seed in (0, 1, 0):
        ok = replay_episode(sim, rec.path, rec.layout, QUERY, seed=seed, experience_id="x", state_id="q")
        finals.setdefault(seed, set()).add((ok, sim.state_hash()))
    assert len(finals[0]) == 1
    assert finals[0] != finals[1]
