"""Policy episodes per second on the CPU: mechanism 2 (agent and wrist cameras, cached-feature
BC-RNN) against mechanism 1 (agent view only), the cost the recipe adds to every policy cell.

Both loops run through `simulator.policy_rollout.run_episode` on the same Stack
validation scenes (stack-val), appearance draws and execution-noise seeds, in one process,
alternating episode by episode so that load changes on a shared machine hit
both alike:

- v1: `simulator.policy_model`'s policy with `PolicyCamera` (the agent view);
- v2: `simulator.policy_recipe`'s policy with `DualCamera` (agent view and
  `robot0_eye_in_hand`, side by side; the agent view centre-cropped).

Untrained networks of each mechanism's published size by default (episodes
then run to the horizon, so the numbers are per step of full-length
episodes), or stored policies (`--v1 DIR`, `--v2 DIR`). Prints render,
inference and simulation milliseconds per control step and the ratio
v2 / v1 episodes/s.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/policy_cameras_bench.py
       [--episodes 6] [--horizon 100] [--v1 DIR] [--v2 DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen rendering picks its backend at import

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.policy_rollout_bench import (  # noqa: E402
    Clock, TimedActor, TimedCamera, TimedSim, run_loops,
)


def v1_actor(directory: str | None):
    """Mechanism 1's actor: a stored policy or an untrained `PolicySpec()` one; and its image size."""
    from simulator.policy_model import PolicyActor, PolicySpec, build_policy, load_policy

    if directory:
        algo, spec = load_policy(Path(directory))
    else:
        spec = PolicySpec()
        algo = build_policy(spec)
        algo.set_eval()
    return PolicyActor(algo), spec.image_size


def v2_actor(directory: str | None):
    """Mechanism 2's actor: a stored policy or an untrained one of the recipe's spec; its image size."""
    from benchmark_data.generation.recipe_policies import recipe_spec
    from simulator.policy_recipe import (CAMERAS, RecipeActor, RecipePolicy, _obs_sizes, build_bc_rnn,
                                      build_encoder)

    if directory:
        policy = RecipePolicy.load(Path(directory))
    else:
        spec = recipe_spec()
        encoders = {cam: build_encoder(spec, cam).eval() for cam in CAMERAS}
        algo = build_bc_rnn(spec)
        algo.set_eval()
        stats = {key: (np.zeros(n, np.float32), np.ones(n, np.float32)) for key, n in _obs_sizes(spec).items()}
        policy = RecipePolicy(spec, encoders, algo, stats)
    return RecipeActor(policy), policy.spec.image_size


def episodes(n: int):
    """(state, draw, seed) per episode: validation states (stack-val; stored policies are never run
    on a frozen query set outside the published cells), all five draws, one seed each."""
    from benchmark_data.generation.query_set_build import validation_states
    from simulator.appearance import sample_draw

    states = validation_states("stack-val")
    return [(states[(7 * i) % len(states)], sample_draw(states[(7 * i) % len(states)].state_id, i % 5), i)
            for i in range(n)]


def run(n: int, horizon: int, v1: str | None, v2: str | None) -> dict:
    import torch

    from simulator.policy_camera import PolicyCamera
    from simulator.stack_sim import StackSim
    from simulator.wrist_camera import DualCamera

    torch.set_num_threads(1)
    loops = {}
    for name, (actor, size), camera_class in (("v1", v1_actor(v1), PolicyCamera), ("v2", v2_actor(v2), DualCamera)):
        clock = Clock()
        sim = StackSim()
        camera = camera_class(sim, task="stack", size=size)
        loops[name] = (TimedSim(sim, clock), TimedCamera(camera, clock, camera.size), TimedActor(actor, clock), clock)
    print(f"v1 {'stored ' + v1 if v1 else 'untrained'}, v2 {'stored ' + v2 if v2 else 'untrained'}; "
          f"{n} episodes x {horizon} steps per loop")
    return run_loops(loops, episodes(n + 1), horizon)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6, help="timed episodes per loop (default 6)")
    parser.add_argument("--horizon", type=int, default=100, help="control steps per episode (default 100)")
    parser.add_argument("--v1", default=None, help="directory of a stored version-1 policy")
    parser.add_argument("--v2", default=None, help="directory of a stored version-2 policy")
    args = parser.parse_args(argv)
    for name, value in (("--episodes", args.episodes), ("--horizon", args.horizon)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    results = run(args.episodes, args.horizon, args.v1, args.v2)
    for name, r in results.items():
        print(f"{name:3s} {r['episodes_per_s']:7.3f} episodes/s/core  per step: render {r['render_ms']:6.2f} ms, "
              f"inference {r['inference_ms']:6.2f} ms, sim {r['sim_ms']:6.2f} ms  "
              f"(success {r['successes']}/{args.episodes})")
    print(f"v2 / v1 = {results['v2']['episodes_per_s'] / results['v1']['episodes_per_s']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
