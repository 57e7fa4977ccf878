"""Seconds per readout controlled cell and per bank, against the matrix executor's episode time.

In one process, alternating item by item so that load changes on a shared machine hit all
alike:

- executor: one Replay episode of `simulator.executor.run_cell` (Stack), the matrix's unit;
- cell: one controlled readout cell (`simulator.readout_cells.Observer.controlled`: restore,
  set, settle 10 steps, checks, both 64 px cameras), for Stack and Door;
- initialization: everything a bank makes of one initialization
  (`simulator.readout_bank.observe_initialization`: the expert's natural frames, 13
  contexts screened at both endpoints, the 6 x 4 grid, one repeated cell).

A bank's seconds are the initialization's times the bank's 152 initializations (one core).

Usage: python benchmarks/readout_bank_bench.py [--items N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GRIDS = {"door": np.linspace(0.0, 16.0, 6), "stack": np.linspace(-72.0, 97.4, 6)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4, help="items per loop (default 4)")
    args = parser.parse_args(argv)

    from benchmark_data.generation.rollouts import build_world
    from simulator.executor import Cell, run_cell
    from simulator.readout_bank import observe_initialization
    from simulator.readout_cells import Observer
    from simulator.readout_inits import SPLITS, initialization, make_sim
    from simulator.stack_scenes import query_states
    from simulator.stack_sim import StackSim

    states = query_states("stack-orig")
    cells = [Cell("replay", "stack-orig", f"stack-e{i % 5:03d}", states[(7 * i) % 40].state_id, i % 5)
             for i in range(args.items)]
    world = build_world(cells)
    replay_sim = StackSim()
    observers = {task: Observer(make_sim(task), task) for task in GRIDS}
    contexts = {}
    for task, obs in observers.items():
        init = initialization(task, "dev", 0)
        contexts[task] = (init, [f for f, _ in obs.natural(init, 1000)][0])
    run_cell(replay_sim, world, cells[0])  # compilation and caches, untimed
    for task, obs in observers.items():
        obs.controlled(contexts[task][0], float(GRIDS[task][2]), contexts[task][1])

    totals = {"executor": 0.0, **{f"cell {t}": 0.0 for t in GRIDS}, **{f"init {t}": 0.0 for t in GRIDS}}
    for i in range(args.items):
        t0 = time.perf_counter()
        run_cell(replay_sim, world, cells[i])
        totals["executor"] += time.perf_counter() - t0
        for task, obs in observers.items():
            init, ctx = contexts[task]
            t0 = time.perf_counter()
            obs.controlled(init, float(GRIDS[task][i % 6]), ctx)
            totals[f"cell {task}"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            observe_initialization(obs, initialization(task, "dev", i % 16), GRIDS[task])
            totals[f"init {task}"] += time.perf_counter() - t0
    for obs in observers.values():
        obs.close()
    n = args.items
    episode = totals["executor"] / n
    per_bank = sum(SPLITS.values())
    print(f"executor Replay episode      {episode * 1000:8.1f} ms")
    for task in GRIDS:
        cell, init = totals[f"cell {task}"] / n, totals[f"init {task}"] / n
        print(f"{task:5s} controlled cell        {cell * 1000:8.1f} ms  = {cell / episode:5.2f} x episode")
        print(f"{task:5s} initialization         {init:8.2f} s   = {init / episode:5.1f} x episode")
        print(f"{task:5s} bank ({per_bank} inits, 1 core) {init * per_bank / 60:8.1f} min "
              f"= {init * per_bank / episode:7.0f} x episode")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
