"""The Stack simulator: exact restore, state hash, render invariance (needs robosuite/MuJoCo)."""

import numpy as np
import pytest

from simulator.stack_scenes import query_states

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def sim():
    from simulator.stack_sim import StackSim

    return StackSim()


def _short_run(sim, layout, steps=40):
    from simulator.osc import yaw_down_rotation

    sim.restore(layout)
    goal = sim.ee_pos() + np.array([0.05, -0.03, -0.08])
    for _ in range(steps):
        sim.step(goal, yaw_down_rotation(0.2), 1.0)
    return sim.state_hash()


def test_restore_is_exact_and_hash_is_stable(sim):
    states = query_states("stack-orig")
    sim.restore(states[0].layout)
    first = sim.state_hash()
    _short_run(sim, states[5].layout)  # dirty the simulator with another episode
    sim.restore(states[0].layout)
    assert sim.state_hash() == first
    assert _short_run(sim, states[0].layout) == _short_run(sim, states[0].layout)


def test_hash_distinguishes_layouts_and_obstacles(sim):
    states = query_states("stack-orig")
    hashes = set()
    for state in states:
        sim.restore(state.layout)
        hashes.add(sim.state_hash())
    assert len(hashes) == len(states)
    with_obstacle = states[30].layout
    from simulator.stack_scenes import StackLayout

    sim.restore(with_obstacle)
    a = sim.state_hash()
    sim.restore(StackLayout(with_obstacle.cube_a, with_obstacle.cube_b, None))
    assert sim.state_hash() != a  # the obstacle lives in the model, and in the hash


def test_appearance_draws_leave_state_and_trajectory_identical(sim):
    from simulator.appearance import Appearance, sample_draw

    state = query_states("stack-orig")[32]
    look = Appearance(sim.model)
    finals, starts = set(), set()
    for draw in range(5):
        look.apply(sample_draw(state.state_id, draw))
        sim.restore(state.layout)
        starts.add(sim.state_hash())
        finals.add(_short_run(sim, state.layout))
    look.apply(sample_draw(state.state_id, 0))
    assert len(starts) == 1 and len(finals) == 1


RENDER_CHECK = """
import numpy as np
from simulator.appearance import SceneRenderer, sample_draw
from simulator.stack_scenes import query_states
from simulator.stack_sim import StackSim
sim = StackSim()
state = query_states("stack-orig")[3]
renderer = SceneRenderer(sim, size=128)
sim.restore(state.layout)
before = sim.state_hash()
images = [renderer.render(sample_draw(state.state_id, d)) for d in range(5)]
assert images[0].shape == (128, 128, 3), images[0].shape
diffs = [float(np.abs(i.astype(int) - images[0].astype(int)).mean()) for i in images[1:]]
assert min(diffs) > 1.0, diffs
assert sim.state_hash() == before
print("render-ok", diffs)
"""


def test_draws_change_the_render():
    """Offscreen rendering picks its OpenGL backend at import, so it runs in a child process."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run([sys.executable, "-c", RENDER_CHECK], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "render-ok" in proc.stdout


def test_expert_stacks_in_its_base_scene(sim):
    from simulator.recording import record

    rec = record(sim, 0)
    assert rec.accepted
    assert rec.actions.shape == (len(rec.path), 7)
    assert np.all(np.abs(rec.actions) <= 1.0)
    assert rec.states.shape[0] == len(rec.path)


def test_the_runner_package_renders_headless_without_being_told():
    """No MUJOCO_GL, no display: a simulator built first (which loads MuJoCo) and a policy
    camera after it still render, as in `expaudit data verify --sample N --policy-sample M`."""
    import os
    import subprocess
    import sys

    code = ("import os; from simulator.stack_sim import StackSim; sim = StackSim(); "
            "from simulator.policy_camera import PolicyCamera; "
            "camera = PolicyCamera(sim, task='stack', size=16); "
            "print(os.environ['MUJOCO_GL'], 'camera-ok'); camera.close()")
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "PYOPENGL_PLATFORM")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "egl camera-ok" in proc.stdout
