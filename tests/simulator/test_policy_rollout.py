"""Policy episodes on the Stack simulator: the lean camera, seeded noise, determinism (needs MuJoCo).

A tiny untrained policy (mechanism 2: agent and wrist views side by side)
drives short episodes: what is checked (the camera leaves the physics alone,
an episode is a pure function of its cell, a batch of one is an episode)
holds for any weights.
"""

import numpy as np
import pytest

pytest.importorskip("robosuite")
pytest.importorskip("torch")
pytest.importorskip("robomimic")

from simulator.appearance import sample_draw  # noqa: E402
from simulator.stack_scenes import query_states  # noqa: E402

pytestmark = pytest.mark.sim

SIZE = 32
HORIZON = 20
EXPERIENCE = "stack-e000"


@pytest.fixture(scope="module")
def actor():
    import torch

    from simulator.policy_recipe import RecipeActor
    from tests.support.policy_training import TINY, untrained_policy

    assert TINY.image_size == SIZE
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield RecipeActor(untrained_policy(TINY))
    torch.set_num_threads(threads)


def _sim_and_camera(**camera_kwargs):
    from simulator.policy_camera import PolicyCamera
    from simulator.stack_sim import StackSim

    sim = StackSim()
    return sim, PolicyCamera(sim, size=SIZE, **camera_kwargs)


@pytest.fixture(scope="module")
def lean():
    sim, camera = _sim_and_camera()
    yield sim, camera
    camera.close()


@pytest.fixture(scope="module")
def lean_b():
    sim, camera = _sim_and_camera()
    yield sim, camera
    camera.close()


def _dual():
    from simulator.stack_sim import StackSim
    from simulator.wrist_camera import DualCamera

    sim = StackSim()
    return sim, DualCamera(sim, size=SIZE)


@pytest.fixture(scope="module")
def dual():
    sim, camera = _dual()
    yield sim, camera
    camera.close()


@pytest.fixture(scope="module")
def dual_b():
    sim, camera = _dual()
    yield sim, camera
    camera.close()


@pytest.fixture(scope="module")
def default():
    sim, camera = _sim_and_camera(lean=False)
    yield sim, camera
    camera.close()


@pytest.fixture(scope="module")
def state():
    return query_states("stack-orig")[3]


def _episode(sim, camera, actor, state, seed, draw=0):
    from simulator.policy_rollout import noise_for, run_episode

    result = run_episode(sim, camera, actor, lambda s: s.restore(state.layout),
                         sample_draw(state.state_id, draw),
                         noise_for(seed, EXPERIENCE, state.state_id, HORIZON), HORIZON)
    return result, sim.state_hash()


def _geom_names(model):
    import mujoco

    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or "" for g in range(model.ngeom)]


# ---- the camera ------------------------------------------------------------------------------
def test_lean_groups_keep_the_cubes_and_drop_heavy_meshes(default):
    from simulator.policy_camera import HEAVY_MESH_FACES, HIDDEN_GROUP, SHOWN_GROUP, _faces, lean_geom_groups

    model = default[0].model  # a default camera leaves the model's groups as robosuite made them
    before = model.geom_group.copy()
    groups = lean_geom_groups(model)
    np.testing.assert_array_equal(model.geom_group, before)  # a pure function of the model
    names = _geom_names(model)
    index = {name: g for g, name in enumerate(names)}
    for cube in ("cubeA_g0_vis", "cubeB_g0_vis"):
        assert groups[index[cube]] == SHOWN_GROUP, cube
    for cube in ("cubeA_g0", "cubeB_g0"):  # collision boxes are not drawn twice
        assert groups[index[cube]] == HIDDEN_GROUP, cube
    heavy = [g for g, name in enumerate(names)
             if name.startswith("robot0_") and _faces(model, g) > HEAVY_MESH_FACES]
    assert heavy and all(groups[g] == HIDDEN_GROUP for g in heavy)
    robot_shown = [g for g, name in enumerate(names) if name.startswith("robot0_") and groups[g] == SHOWN_GROUP]
    assert robot_shown and all(_faces(model, g) <= HEAVY_MESH_FACES for g in robot_shown)


def test_rendering_leaves_state_and_trajectory_untouched(lean, state):
    from simulator.osc import yaw_down_rotation

    sim, camera = lean
    camera.set_draw(sample_draw(state.state_id, 0))

    def run(render: bool) -> str:
        sim.restore(state.layout)
        goal = sim.ee_pos() + np.array([0.04, -0.02, -0.06])
        for _ in range(8):
            if render:
                before = sim.state_hash()
                camera.render()
                assert sim.state_hash() == before
            sim.step(goal, yaw_down_rotation(0.1), 1.0)
        return sim.state_hash()

    assert run(render=True) == run(render=False)


def test_lean_and_default_images(lean, default, state):
    images = []
    for sim, camera in (lean, default):
        sim.restore(state.layout)
        camera.set_draw(sample_draw(state.state_id, 0))
        images.append(camera.render())
    for image in images:
        assert image.shape == (SIZE, SIZE, 3) and image.dtype == np.uint8
        assert image.std() > 10  # a scene, not a blank frame
    assert not np.array_equal(images[0], images[1])


# ---- noise and episodes ----------------------------------------------------------------------
def test_noise_is_a_function_of_the_cell():
    from simulator.policy_rollout import noise_for

    a = noise_for(3, EXPERIENCE, "stack-orig-s04", HORIZON)
    b = noise_for(3, EXPERIENCE, "stack-orig-s04", HORIZON)
    np.testing.assert_array_equal(a.offset, b.offset)
    np.testing.assert_array_equal(a.jitter, b.jitter)
    assert a.jitter.shape == (HORIZON, 3) and a.offset.shape == (2,)
    for other in (noise_for(4, EXPERIENCE, "stack-orig-s04", HORIZON),
                  noise_for(3, "stack-e001", "stack-orig-s04", HORIZON),
                  noise_for(3, EXPERIENCE, "stack-orig-s05", HORIZON)):
        assert not np.array_equal(a.offset, other.offset)
        assert not np.array_equal(a.jitter, other.jitter)


def test_episode_is_a_function_of_its_cell(dual, actor, state):
    sim, camera = dual
    first = _episode(sim, camera, actor, state, seed=0)
    assert first[0].steps <= HORIZON
    _episode(sim, camera, actor, query_states("stack-orig")[17], seed=5)  # dirty sim and RNN state
    assert _episode(sim, camera, actor, state, seed=0) == first
    assert _episode(sim, camera, actor, state, seed=1)[1] != first[1]  # other noise, other trajectory


def test_batch_of_one_is_an_episode(dual, actor, state):
    from simulator.policy_rollout import noise_for, run_batch

    sim, camera = dual
    single = _episode(sim, camera, actor, state, seed=2)
    results = run_batch([sim], [camera], actor, [lambda s: s.restore(state.layout)],
                        [sample_draw(state.state_id, 0)],
                        [noise_for(2, EXPERIENCE, state.state_id, HORIZON)], HORIZON)
    assert (results[0], sim.state_hash()) == single


def test_batch_of_two_is_deterministic_per_layout(dual, dual_b, actor):
    """Guaranteed: the same batch gives the same outcomes. Not asserted: that env 0 of a batch
    equals its single-environment episode (batched CPU inference may differ in the last bits)."""
    from simulator.policy_rollout import noise_for, run_batch

    states = query_states("stack-orig")
    pair = (states[3], states[17])
    sims, cameras = [dual[0], dual_b[0]], [dual[1], dual_b[1]]

    def batch():
        results = run_batch(sims, cameras, actor, [lambda s, st=st: s.restore(st.layout) for st in pair],
                            [sample_draw(st.state_id, 0) for st in pair],
                            [noise_for(0, EXPERIENCE, st.state_id, HORIZON) for st in pair], HORIZON)
        return results, [sim.state_hash() for sim in sims]

    first = batch()
    assert batch() == first
    assert len(set(first[1])) == 2


# ---- several cameras in one process (a GPU runner steps many) --------------------------------
def test_each_camera_uploads_draw_textures_to_its_own_context(lean, lean_b, state):
    draws = [sample_draw(state.state_id, d) for d in range(1, 5)]
    draw = max(draws, key=lambda d: max(abs(b) for b in d.texture_bias))  # a visible texture change
    (sim_a, cam_a), (sim_b, cam_b) = lean, lean_b
    nominal = sample_draw(state.state_id, 0)
    try:
        for sim in (sim_a, sim_b):
            sim.restore(state.layout)
        cam_a.render()  # camera A's context is now current
        cam_b.set_draw(draw)
        cam_a.set_draw(draw)
        assert np.array_equal(cam_a.render(), cam_b.render())
    finally:  # leave both contexts with nominal textures
        for camera in (cam_a, cam_b):
            camera.render()
            camera.set_draw(nominal)


def test_a_second_lean_camera_on_one_simulator_sees_the_scene(state):
    from simulator.policy_camera import PolicyCamera

    sim, first = _sim_and_camera()
    second = PolicyCamera(sim, size=SIZE)
    try:
        sim.restore(state.layout)
        images = []
        for camera in (first, second):
            camera.set_draw(sample_draw(state.state_id, 0))
            images.append(camera.render())
        assert images[1].std() > 10
        assert np.array_equal(images[0], images[1])
    finally:
        second.close()
        first.close()
