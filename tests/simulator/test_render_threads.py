"""llvmpipe without its own threads (the runner's default) draws the same pixels, only faster.

`runner` sets `LP_NUM_THREADS=0` unless the environment sets it, so every
policy cell made from now on renders in the calling thread. That is safe
only if the pixels, hence a policy's actions, do not depend on it: here two
fresh processes render the same two-camera frames under three appearance
draws, one with the runner's default and one with llvmpipe's own default
(the child removes the runner's 0 before any context exists), and the
frames must be identical; a third sets 2 threads, which must win over the
runner's default. Speed: `benchmarks/render_threads_bench.py`.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO_ROOT

pytest.importorskip("robosuite")
pytestmark = pytest.mark.sim

CHILD = """
import hashlib, json, os, sys
import simulator
if sys.argv[1] == "llvmpipe-default":
    os.environ.pop("LP_NUM_THREADS")
from benchmark_data.generation.query_set_build import validation_states
from simulator.appearance import sample_draw
from simulator.policy_executor import gl_renderer
from simulator.stack_sim import StackSim
from simulator.wrist_camera import DualCamera
state = validation_states("stack-val")[3]
sim = StackSim(); sim.restore(state.layout)
camera = DualCamera(sim, task="stack")
frames = []
for draw in (0, 2, 4):
    camera.set_draw(sample_draw(state.state_id, draw))
    frames.append(hashlib.sha256(camera.render().tobytes()).hexdigest())
print(json.dumps({"lp": os.environ.get("LP_NUM_THREADS"), "renderer": gl_renderer(camera), "frames": frames}))
"""


def _render(lp_num_threads, mode="runner"):
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    env.setdefault("MUJOCO_GL", "egl")
    if lp_num_threads is not None:
        env["LP_NUM_THREADS"] = lp_num_threads
    done = subprocess.run([sys.executable, "-c", CHILD, mode], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_runner_renders_without_llvmpipe_threads_and_draws_the_same_pixels():
    default = _render(None)
    if not default["renderer"].startswith("llvmpipe"):
        pytest.skip(f"the renderer is {default['renderer']!r}, not Mesa's llvmpipe")
    assert default["lp"] == "0"  # the runner's default
    own = _render(None, "llvmpipe-default")
    assert own["lp"] is None
    two = _render("2")
    assert two["lp"] == "2"  # an explicit value wins
    assert len(set(default["frames"])) == 3  # three draws, three different images
    assert own["frames"] == default["frames"] and two["frames"] == default["frames"]
