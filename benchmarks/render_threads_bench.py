"""Policy-camera frames per second with Mesa llvmpipe's own render threads against none.

llvmpipe, the software renderer behind EGL on a machine without a GPU, starts
one rasterizer thread per core in every process that renders. A policy cell
renders two 64 px views per control step, and the CPU runner keeps one
simulator process per core, so those threads only contend with the other
processes. `runner` therefore sets `LP_NUM_THREADS=0` (rasterize in the
calling thread) unless the environment sets it. This compares both:

- `default`: `LP_NUM_THREADS` unset, llvmpipe's own thread count (the child
  removes the 0 that importing `runner` sets, before any context exists);
- `none`: `LP_NUM_THREADS=0`.

Each round starts `--workers` child processes of one mode at once (the
generation runs one per core), each rendering `DualCamera` frame pairs of
Stack validation states under all five appearance draws, 50 per draw as in
an episode; rounds alternate
the modes so that load changes on a shared machine hit both alike. Prints
frame pairs per second per mode, the ratio none / default, and whether both
modes drew identical pixels (they must: the setting changes speed only).

Usage: .venv/bin/python benchmarks/render_threads_bench.py [--rounds 3] [--workers 2] [--frames 500]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODES = {"default": None, "none": "0"}
"""LP_NUM_THREADS of each mode: unset (llvmpipe's own default) and 0."""
FRAMES_PER_DRAW = 50
"""Frame pairs rendered per (state, draw), about a policy episode's control steps."""


def child(frames: int, llvmpipe_default: bool) -> dict:
    """Render `frames` frame pairs in this process; (seconds, sha256 of every pixel)."""
    import simulator  # noqa: F401  (sets LP_NUM_THREADS=0 unless set)

    if llvmpipe_default:
        os.environ.pop("LP_NUM_THREADS", None)
    from benchmark_data.generation.query_set_build import validation_states
    from simulator.appearance import sample_draw
    from simulator.stack_sim import StackSim
    from simulator.wrist_camera import DualCamera

    states = validation_states("stack-val")
    sim = StackSim()
    camera = DualCamera(sim, task="stack")
    digest = hashlib.sha256()
    camera.render()  # context and textures warm
    start = time.perf_counter()
    for i in range(frames):
        episode, step = divmod(i, FRAMES_PER_DRAW)
        state = states[(episode // 5) % len(states)]
        if step == 0:  # a new episode: its state and draw, as a policy cell sets them
            sim.restore(state.layout)
            camera.set_draw(sample_draw(state.state_id, episode % 5))
        digest.update(camera.render().tobytes())
    seconds = time.perf_counter() - start
    camera.close()
    return {"seconds": seconds, "pixels": digest.hexdigest()}


def run_mode(mode: str, workers: int, frames: int) -> tuple[float, set]:
    """Render seconds of the slowest of `workers` concurrent children of `mode` (start-up and
    imports excluded), and their pixel hashes."""
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    if MODES[mode] is not None:
        env["LP_NUM_THREADS"] = MODES[mode]
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [sys.executable, __file__, "--child", str(frames)]
    if MODES[mode] is None:
        command.append("--llvmpipe-default")
    procs = [subprocess.Popen(command, cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(workers)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a {mode} child failed")
    outs = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    return max(o["seconds"] for o in outs), {o["pixels"] for o in outs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode, alternating (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent rendering processes (default 2)")
    parser.add_argument("--frames", type=int, default=500, help="frame pairs per process (default 500)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--llvmpipe-default", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        sys.path.insert(0, str(REPO))
        print(json.dumps(child(args.child, args.llvmpipe_default)))
        return 0
    for name in ("rounds", "workers", "frames"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    seconds = {mode: 0.0 for mode in MODES}
    pixels = {mode: set() for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            wall, hashes = run_mode(mode, args.workers, args.frames)
            seconds[mode] += wall
            pixels[mode] |= hashes
    pairs = args.rounds * args.workers * args.frames
    rate = {mode: pairs / s for mode, s in seconds.items()}
    print(f"{args.workers} processes x {args.frames} frame pairs x {args.rounds} rounds per mode")
    for mode in MODES:
        print(f"{mode:8s} {rate[mode]:8.1f} frame pairs/s (all processes)")
    print(f"none / default = {rate['none'] / rate['default']:.2f}x")
    same = len(pixels["default"] | pixels["none"]) == 1
    print(f"pixels identical across modes and processes: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
