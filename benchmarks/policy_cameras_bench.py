"""Policy episodes per second on the CPU: the published policies' mechanism (2: agent and wrist
cameras, cached-feature BC-RNN), the cost of every policy cell.

The loop runs through `simulator.policy_rollout.run_episode` on Stack
validation scenes (stack-val), appearance draws and execution-noise seeds,
with `simulator.policy_recipe`'s policy and `DualCamera` (agent view and
`robot0_eye_in_hand`, side by side; the agent view centre-cropped).

An untrained network of the recipe's size by default (episodes then run to
the horizon, so the numbers are per step of full-length episodes), or a
stored policy (`--policy DIR`). Prints render, inference and simulation
milliseconds per control step. Until mechanism 1 (agent view only) was
retired this compared the two: 13.5 ms per step against 8.1 (docs/data.md).

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/policy_cameras_bench.py
       [--episodes 6] [--horizon 100] [--policy DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen rendering picks its backend at import

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.policy_rollout_bench import (  # noqa: E402
    Clock, TimedActor, TimedCamera, TimedSim, recipe_actor, run_loops,
)


def episodes(n: int):
    """(state, draw, seed) per episode: validation states (stack-val; stored policies are never run
    on a frozen query set outside the published cells), all five draws, one seed each."""
    from benchmark_data.generation.query_set_build import validation_states
    from simulator.appearance import sample_draw

    states = validation_states("stack-val")
    return [(states[(7 * i) % len(states)], sample_draw(states[(7 * i) % len(states)].state_id, i % 5), i)
            for i in range(n)]


def run(n: int, horizon: int, policy: str | None) -> dict:
    from simulator.stack_sim import StackSim
    from simulator.wrist_camera import DualCamera

    actor, size, label = recipe_actor(policy)
    clock = Clock()
    sim = StackSim()
    camera = DualCamera(sim, task="stack", size=size)
    loops = {"v2": (TimedSim(sim, clock), TimedCamera(camera, clock, camera.size), TimedActor(actor, clock), clock)}
    print(f"{label}; image {size}px; {n} episodes x {horizon} steps")
    return run_loops(loops, episodes(n + 1), horizon)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6, help="timed episodes per loop (default 6)")
    parser.add_argument("--horizon", type=int, default=100, help="control steps per episode (default 100)")
    parser.add_argument("--policy", default=None, help="directory of a stored (mechanism-2) policy")
    args = parser.parse_args(argv)
    for name, value in (("--episodes", args.episodes), ("--horizon", args.horizon)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    r = run(args.episodes, args.horizon, args.policy)["v2"]
    print(f"v2 {r['episodes_per_s']:7.3f} episodes/s/core  per step: render {r['render_ms']:6.2f} ms, "
          f"inference {r['inference_ms']:6.2f} ms, sim {r['sim_ms']:6.2f} ms  "
          f"(success {r['successes']}/{args.episodes})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
