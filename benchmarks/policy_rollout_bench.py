"""Policy episodes per second on the CPU: the lean policy camera against default robosuite-style renders.

Both loops run the same policy on the same Stack scenes, appearance draws and
execution-noise seeds through `simulator.policy_rollout.run_episode`, in one
process, alternating episode by episode so that load changes on a shared
machine hit both alike:

- lean: `PolicyCamera()` (no shadows, reflections, skybox or multisampling,
  low-polygon robot geoms, the policy's image size);
- default: `PolicyCamera(lean=False, size=84)` (robosuite's visuals, shadows,
  multisampling at robomimic's usual 84x84), sampled down to the policy's
  image size (nearest pixel, counted as render time) so the same network reads it.

The policy is of mechanism 2 (`simulator.policy_recipe`), which reads the
agent and wrist views side by side; both loops render the agent view only
and hand it to the policy in both halves, so the ratio isolates the agent
view's render (`benchmarks/policy_cameras_bench.py` times the real
two-camera loop). Each simulator has its own camera (a lean camera changes
its model's geom groups). Per control step it prints render, inference and
simulation milliseconds; the ratio is lean / default episodes/s. An
untrained policy of the recipe's spec rarely succeeds, so episodes run to
the horizon: the numbers are per step of full-length episodes.

Usage: OMP_NUM_THREADS=1 MUJOCO_GL=egl .venv/bin/python benchmarks/policy_rollout_bench.py
       [--episodes 6] [--horizon 100] [--policy DIR] [--default-size 84]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen rendering picks its backend at import

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXPERIENCE = "stack-e000"


class Clock:
    """Seconds spent in each part of the loop."""

    def __init__(self) -> None:
        self.seconds = {"render": 0.0, "inference": 0.0, "sim": 0.0}
        self.steps = 0

    def add(self, part: str, start: float) -> None:
        self.seconds[part] += time.perf_counter() - start


class TimedCamera:
    """A policy camera whose renders are timed and, if needed, sampled down to the policy's size;
    with `both_halves`, an agent-view camera's image is handed on twice, side by side, in the
    two-camera policy's frame layout."""

    def __init__(self, camera, clock: Clock, out_size: int, both_halves: bool = False) -> None:
        self.camera, self.clock = camera, clock
        self.both_halves = both_halves
        self.index = None
        if camera.size != out_size:
            self.index = (np.arange(out_size) * camera.size) // out_size

    def set_draw(self, draw) -> None:
        self.camera.set_draw(draw)

    def render(self) -> np.ndarray:
        start = time.perf_counter()
        image = self.camera.render()
        if self.index is not None:
            image = np.ascontiguousarray(image[self.index][:, self.index])
        if self.both_halves:
            image = np.concatenate([image, image], axis=1)
        self.clock.add("render", start)
        return image


class TimedActor:
    """A policy actor whose forward passes are timed (one per control step)."""

    def __init__(self, actor, clock: Clock) -> None:
        self.actor, self.clock = actor, clock

    def reset(self) -> None:
        self.actor.reset()

    def act(self, images, eef_pos, gripper_qpos):
        start = time.perf_counter()
        action = self.actor.act(images, eef_pos, gripper_qpos)
        self.clock.add("inference", start)
        self.clock.steps += 1
        return action


class TimedSim:
    """A Stack simulator whose control steps and success checks are timed."""

    def __init__(self, sim, clock: Clock) -> None:
        self.sim, self.clock = sim, clock

    def __getattr__(self, name):
        return getattr(self.sim, name)

    def step(self, *args) -> None:
        start = time.perf_counter()
        self.sim.step(*args)
        self.clock.add("sim", start)

    def success(self) -> bool:
        start = time.perf_counter()
        ok = self.sim.success()
        self.clock.add("sim", start)
        return ok


def recipe_actor(directory: str | None):
    """(actor, image size, label) of a policy: a stored one, or an untrained one of the recipe's
    spec (`benchmark_data.generation.recipe_policies.recipe_spec`)."""
    import torch

    from benchmark_data.generation.recipe_policies import recipe_spec
    from simulator.policy_recipe import (CAMERAS, RecipeActor, RecipePolicy, _obs_sizes, build_bc_rnn,
                                         build_encoder)

    torch.set_num_threads(1)
    if directory:
        policy = RecipePolicy.load(Path(directory))
        return RecipeActor(policy), policy.spec.image_size, f"stored policy {directory}"
    spec = recipe_spec()
    encoders = {cam: build_encoder(spec, cam).eval() for cam in CAMERAS}
    algo = build_bc_rnn(spec)
    algo.set_eval()
    stats = {key: (np.zeros(n, np.float32), np.ones(n, np.float32)) for key, n in _obs_sizes(spec).items()}
    return RecipeActor(RecipePolicy(spec, encoders, algo, stats)), spec.image_size, "untrained recipe policy"


def episodes(n: int):
    """(state, draw, seed) per episode: Stack query states, all five draws, one seed each."""
    from simulator.appearance import sample_draw
    from simulator.stack_scenes import query_states

    states = query_states("stack-orig")
    return [(states[(7 * i) % len(states)], sample_draw(states[(7 * i) % len(states)].state_id, i % 5), i)
            for i in range(n)]


def run(n: int, horizon: int, policy: str | None, default_size: int) -> dict:
    from simulator.policy_camera import PolicyCamera
    from simulator.stack_sim import StackSim

    actor, size, label = recipe_actor(policy)
    print(f"{label}; image {size}px; {n} episodes x {horizon} steps per loop")
    loops = {}
    for name, kwargs in (("lean", {"size": size}), ("default", {"lean": False, "size": default_size})):
        clock = Clock()
        sim = StackSim()
        camera = TimedCamera(PolicyCamera(sim, **kwargs), clock, size, both_halves=True)
        loops[name] = (TimedSim(sim, clock), camera, TimedActor(actor, clock), clock)
    return run_loops(loops, episodes(n + 1), horizon)


def run_loops(loops: dict, cells, horizon: int) -> dict:
    """Run every loop (sim, camera, actor, clock) on each (state, draw, seed) of `cells` in turn,
    episode by episode; the first episode warms up, untimed. Per loop: episodes/s, successes and
    milliseconds per step of each part; closes the cameras."""
    from simulator.policy_rollout import noise_for, run_episode

    n = len(cells) - 1
    totals = {name: [0.0, 0] for name in loops}
    for i, (state, draw, seed) in enumerate(cells):
        noise = noise_for(seed, EXPERIENCE, state.state_id, horizon)
        for name, (sim, camera, timed_actor, clock) in loops.items():
            if i == 0:
                saved = (dict(clock.seconds), clock.steps)
            start = time.perf_counter()
            result = run_episode(sim, camera, timed_actor, lambda s, st=state: s.restore(st.layout),
                                 draw, noise, horizon)
            if i == 0:  # warm-up episode (allocations, caches), untimed
                clock.seconds, clock.steps = saved
                continue
            totals[name][0] += time.perf_counter() - start
            totals[name][1] += int(result.success)
    out = {}
    for name, (_, camera, _, clock) in loops.items():
        camera.camera.close()
        seconds, wins = totals[name]
        out[name] = {"episodes_per_s": n / seconds, "successes": wins, "steps": clock.steps,
                     **{f"{part}_ms": 1000 * s / max(clock.steps, 1) for part, s in clock.seconds.items()}}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6, help="timed episodes per loop (default 6)")
    parser.add_argument("--horizon", type=int, default=100, help="control steps per episode (default 100)")
    parser.add_argument("--policy", default=None,
                        help="directory of a stored policy (spec.json, weights.pt; mechanism 2)")
    parser.add_argument("--default-size", type=int, default=84,
                        help="image side of the default-render loop (default 84)")
    args = parser.parse_args(argv)
    for name, value in (("--episodes", args.episodes), ("--horizon", args.horizon),
                        ("--default-size", args.default_size)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    results = run(args.episodes, args.horizon, args.policy, args.default_size)
    for name, r in results.items():
        print(f"{name:8s} {r['episodes_per_s']:7.3f} episodes/s/core  per step: render {r['render_ms']:6.2f} ms, "
              f"inference {r['inference_ms']:6.2f} ms, sim {r['sim_ms']:6.2f} ms  "
              f"(success {r['successes']}/{args.episodes})")
    ratio = results["lean"]["episodes_per_s"] / results["default"]["episodes_per_s"]
    print(f"lean / default = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
