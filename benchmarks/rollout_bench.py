"""Replay episodes per second per core: the executor, robosuite's stock env.step loop, raw mj_step.

All three run the same Replay episodes (same recorded paths, same query
layouts, same execution noise) in one process, alternating episode by
episode so that load changes on a shared machine affect them alike:

- executor: `simulator.executor.run_cell` (lean OSC loop, what generated the data);
- stock: robosuite's `env.step` with the OSC_POSE delta action that moves
  towards the same target each control step (observables on, hard_reset=False);
- raw: `mujoco.mj_step` for the same number of substeps from the same initial
  state, with no controller at all (the upper bound of any loop).

Usage: python benchmarks/rollout_bench.py [--episodes N]
Targets: executor >= 4x stock and >= 50% of raw.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _episodes(n: int):
    from benchmark_data.generation.rollouts import build_world
    from simulator.executor import Cell
    from simulator.stack_scenes import query_states

    states = query_states("stack-orig")
    cells = [Cell("replay", "stack-orig", f"stack-e{i % 5:03d}", states[(7 * i) % 40].state_id, i % 5)
             for i in range(n)]
    return cells, build_world(cells)


def _noisy_path(world, cell):
    from simulator.replay import apply_noise, noise_for, retarget

    base, path = world.experiences[cell.experience_id]
    moved = retarget(path, base, world.states[cell.state_id])
    return apply_noise(moved, noise_for(cell.seed, cell.experience_id, cell.state_id, len(moved)))


def _time_executor(sim, world, cell) -> tuple[float, int]:
    from simulator.executor import run_cell

    start = time.perf_counter()
    ok = run_cell(sim, world, cell).success
    return time.perf_counter() - start, ok


def _stock_episode(sim, path) -> bool:
    from simulator.osc import yaw_down_rotation
    from simulator.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE, _rotvec

    env = sim.env
    for row in path:
        pos, rot = sim.ee_pos(), sim.ee_rot()
        dpos = np.clip((row[:3] - pos) / DELTA_POS_SCALE, -1, 1)
        drot = np.clip(_rotvec(yaw_down_rotation(float(row[3])) @ rot.T) / DELTA_ROT_SCALE, -1, 1)
        env.step(np.concatenate([dpos, drot, [row[4]]]))
    return bool(env._check_success())


def _stock_reset(sim, layout) -> None:
    """robosuite reset (hard_reset=False), then the query layout and fresh controller goals."""
    env = sim.env
    env.reset()
    sim.restore(layout)
    env.sim.forward()
    for controller in env.robots[0].part_controllers.values():
        controller.update(force=True)
        controller.reset_goal()


def _time_stock(sim, world, cell) -> tuple[float, int]:
    path = _noisy_path(world, cell)
    _stock_reset(sim, world.states[cell.state_id])
    start = time.perf_counter()
    ok = _stock_episode(sim, path)
    return time.perf_counter() - start, int(ok)


def _time_raw(sim, world, cell) -> tuple[float, int]:
    import mujoco

    n_steps = len(_noisy_path(world, cell)) * sim.substeps
    sim.restore(world.states[cell.state_id])
    m, d = sim.model, sim.data
    start = time.perf_counter()
    for _ in range(n_steps):
        mujoco.mj_step(m, d)
    return time.perf_counter() - start, 0


LOOPS = (("executor", _time_executor), ("stock env.step", _time_stock), ("raw mj_step", _time_raw))


def run(cells, world) -> dict[str, tuple[float, int]]:
    """Total seconds and successes per loop; the loops alternate episode by episode, so a
    change of machine load hits all three alike."""
    from simulator.stack_sim import StackSim

    sims = {name: StackSim() for name, _ in LOOPS}
    for name, fn in LOOPS:
        fn(sims[name], world, cells[0])  # numba compilation and caches, untimed
    totals = {name: [0.0, 0] for name, _ in LOOPS}
    for cell in cells:
        for name, fn in LOOPS:
            seconds, ok = fn(sims[name], world, cell)
            totals[name][0] += seconds
            totals[name][1] += ok
    return {name: (t[0], t[1]) for name, t in totals.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10, help="episodes per loop (default 10)")
    args = parser.parse_args(argv)
    cells, world = _episodes(args.episodes)
    n = len(cells)
    results = {}
    for name, (seconds, wins) in run(cells, world).items():
        results[name] = n / seconds
        extra = f", success {wins}/{n}" if name != "raw mj_step" else ""
        print(f"{name:15s} {n / seconds:7.2f} episodes/s/core{extra}")
    ex = results["executor"]
    print(f"executor / stock = {ex / results['stock env.step']:.2f}x (target >= 4x)")
    print(f"executor / raw   = {100 * ex / results['raw mj_step']:.0f}% (target >= 50%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
