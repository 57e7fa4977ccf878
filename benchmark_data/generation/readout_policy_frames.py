"""Natural observations from the published image policies' rollouts (readout protocol,
amendment 1): the frames a bank version 2 adds beside the expert's.

Every published image policy of a task runs once (execution-noise seed 0) from each `train`,
`dev` and `confirm` initialization, as its outcome cells run (`simulator.policy_executor`: the
policy reads its own two cameras, same noise, horizon and success check). Along the rollout, the
state before every `NATURAL_EVERY`-th control step's action and the final state are kept as
natural rows: both bank cameras (`simulator.readout_cells.Observer`: the bank's appearance and 64
px views, not the policy's), the true coordinate, the gripper's distance to the target and the
state hash, with the policy, its code version and the seed.

Resumable: one rollout is one unit, written to the work directory as `<split>/<init>--<policy
slug>.parquet` and `.npz` (table last, so a torn unit is made again); a rerun skips every unit
whose table exists. `confirm` rows hold sealed labels, so the work directory is the bank
generation's, under the gitignored `var/`. `readout_bank_v2 assemble` makes them rows of bank
version 2 (ids, image shards); `--bank v2` runs the policies from version 2's `confirm`.

    python -m benchmark_data.generation.readout_policy_frames --task door [--limit N]
    python -m benchmark_data.generation.readout_policy_frames --estimate 6 --work /tmp/frames
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from benchmark_data.generation.readout_banks import work_dir
from benchmark_data.generation.readout_features import NotComputed, load_representation, representation_names
from benchmark_data.policy_files import policy_dirs
from expaudit.errors import InvalidInput
from simulator.appearance import sample_draw
from simulator.policy_executor import load_actor, make_camera
from simulator.policy_rollout import HORIZON, SUCCESS_EVERY, command, noise_for
from simulator.provenance import policy_code_version
from simulator.readout_cells import Observer
from simulator.readout_inits import BANKS, Initialization, initializations, make_sim, start
from simulator.readout_protocol import NATURAL_EVERY

FRAMES_VERSION = "readout-policy-frames/1"
"""Declared version of how frames are taken from a rollout (which steps, which cameras)."""
SPLITS = ("train", "dev", "confirm")
"""The initializations whose natural observations the policies' frames join (not `eval`)."""
SEED = 0
"""One rollout per (policy, initialization): execution-noise seed 0 of the outcome cells."""
TASKS = ("door", "stack")
ROW_COLUMNS = ("initialization", "split", "source", "episode", "frame", "coordinate", "gripper_distance",
               "state_hash", "image", "success", "steps", "code_version")


@dataclass(frozen=True)
class Rollout:
    """One policy rollout's natural rows (`image` indexes `agent` and `wrist`)."""

    rows: pd.DataFrame
    agent: np.ndarray
    wrist: np.ndarray
    success: bool
    final_hash: str


def policy_slug(policy: str) -> str:
    return policy.replace("/", "-")


def unit_paths(work: Path, split: str, init_id: str, policy: str) -> tuple[Path, Path]:
    base = work / split / f"{init_id}--{policy_slug(policy)}"
    return base.with_suffix(".parquet"), base.with_suffix(".npz")


def frames_work_dir(task: str, root: str | Path | None = None) -> Path:
    """`<bank work dir>-policy-frames` (gitignored `var/`, holds sealed labels of `confirm`)."""
    base = work_dir(task, root)
    return base.with_name(base.name + "-policy-frames")


def rollout_frames(observer: Observer, policy_camera, actor, init: Initialization, policy: str,
                   experience_id: str, code_version: str, *, seed: int = SEED,
                   horizon: int | None = None, every: int | None = None) -> Rollout:
    """Run one policy from `init` as its outcome cell runs and keep its natural frames.

    The loop is `simulator.policy_rollout.run_batch` for one simulator (the same start, noise,
    success check every `SUCCESS_EVERY` steps), with the bank's cameras rendered before the
    action of every `every`-th step and at the final state; rendering them changes no state.
    """
    sim, task = observer.sim, observer.task
    horizon = horizon if horizon is not None else HORIZON[task]
    every = every if every is not None else NATURAL_EVERY[task]
    policy_camera.set_draw(sample_draw(init.init_id, 0))
    start(sim, init)
    actor.reset()
    noise = noise_for(seed, experience_id, init.init_id, horizon)
    rows, agents, wrists = [], [], []

    def keep(step: int) -> None:
        agent, wrist = observer.render()
        rows.append({"frame": step, "coordinate": observer.target.coordinate(),
                     "gripper_distance": observer.target.gripper_distance(), "state_hash": sim.state_hash(),
                     "image": len(agents)})
        agents.append(agent)
        wrists.append(wrist)

    image = policy_camera.render()
    success, steps = False, horizon
    for t in range(horizon):
        if t % every == 0:
            keep(t)
        action = actor.act(image[None], sim.ee_pos()[None], sim.data.qpos[7:9][None])[0]
        sim.step(*command(sim, action, noise, t))
        if (t + 1) % SUCCESS_EVERY == 0 and sim.success():
            success, steps = True, t + 1
            break
        image = policy_camera.render()
    keep(steps)
    frame = pd.DataFrame(rows)
    frame = frame.assign(initialization=init.init_id, split=init.split, source=policy, episode=seed,
                         success=success, steps=steps, code_version=f"{FRAMES_VERSION}+{code_version}")
    return Rollout(frame[list(ROW_COLUMNS)], np.stack(agents), np.stack(wrists), success, sim.state_hash())


def _atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_unit(work: Path, rollout: Rollout) -> Path:
    """Store one rollout: images first, its table last (the table's presence marks it done)."""
    first = rollout.rows.iloc[0]
    table, images = unit_paths(work, first["split"], first["initialization"], first["source"])
    buf = io.BytesIO()
    np.savez_compressed(buf, agentview=rollout.agent, wrist=rollout.wrist)
    _atomic(images, buf.getvalue())
    buf = io.BytesIO()
    rollout.rows.to_parquet(buf, index=False)
    _atomic(table, buf.getvalue())
    return table


def run_frames(task: str, *, splits: Sequence[str] = SPLITS, work: Path | None = None,
               policies_root: str | Path | None = None, limit: int | None = None,
               horizon: int | None = None, bank: str = "v1",
               log: Callable[[str], None] = lambda line: None) -> int:
    """Make every missing rollout unit of `task` (at most `limit` new ones) from the
    initializations of bank version `bank`; returns how many.

    Order: split by split, each initialization run by every policy before the next, so any
    prefix of a run holds whole initializations.
    """
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise InvalidInput(f"splits: must be among {SPLITS}, got {unknown}")
    work = work or frames_work_dir(task)
    dirs = policy_dirs(task, policies_root)
    if not dirs:
        raise InvalidInput(f"{task}: no published image policy in the frozen data")
    sim = make_sim(task)
    observer = Observer(sim, task)
    loaded: dict = {}
    made = 0
    try:
        for split in splits:
            for init in initializations(task, split, bank):
                for (mechanism, eid), directory in sorted(dirs.items()):
                    policy = f"{mechanism}/{eid}"
                    if unit_paths(work, split, init.init_id, policy)[0].exists():
                        continue
                    if limit is not None and made >= limit:
                        return made
                    if (mechanism, eid) not in loaded:
                        actor, size = load_actor(str(directory))
                        loaded[(mechanism, eid)] = (actor, make_camera(sim, task, size),
                                                    policy_code_version(Path(directory)))
                    actor, camera, version = loaded[(mechanism, eid)]
                    began = time.perf_counter()
                    rollout = rollout_frames(observer, camera, actor, init, policy, eid, version, horizon=horizon)
                    write_unit(work, rollout)
                    made += 1
                    log(f"{task} {init.init_id} {policy}: {len(rollout.rows)} frames, success "
                        f"{rollout.success} ({time.perf_counter() - began:.1f} s)")
    finally:
        for _, camera, _ in loaded.values():
            camera.close()
        observer.close()
    return made


def read_units(work: Path) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Every stored unit's rows (`image` re-indexed into the returned views) and images."""
    frames, agents, wrists, offset = [], [], [], 0
    for table in sorted(work.glob("*/*.parquet")):
        rows = pd.read_parquet(table)
        with np.load(table.with_suffix(".npz")) as z:
            agents.append(z["agentview"])
            wrists.append(z["wrist"])
        frames.append(rows.assign(image=rows["image"] + offset))
        offset += len(agents[-1])
    if not frames:
        return pd.DataFrame(columns=list(ROW_COLUMNS)), np.zeros((0, 64, 64, 3), np.uint8), np.zeros((0, 64, 64, 3), np.uint8)
    return pd.concat(frames, ignore_index=True), np.concatenate(agents), np.concatenate(wrists)


def measure(task: str, work: Path, rollouts: int, *, log: Callable[[str], None] = lambda line: None) -> dict:
    """One-core cost of the whole chain for `task`, from `rollouts` measured rollouts: seconds
    and frames per rollout, the seconds per row of every reference representation of the task,
    and their totals over every policy and every train, dev and confirm initialization."""
    began = time.perf_counter()
    made = run_frames(task, splits=("dev",), work=work, limit=rollouts, log=log)
    per_rollout = (time.perf_counter() - began) / max(made, 1)
    rows, agent, wrist = read_units(work)
    per_row = {}
    for name in representation_names(task):
        rep = load_representation(task, name)
        if isinstance(rep, NotComputed):
            continue
        rep.embed(agent[:1], wrist[:1])  # load and warm
        t0 = time.perf_counter()
        rep.embed(agent, wrist)
        per_row[name] = (time.perf_counter() - t0) / len(agent)
    n = len(policy_dirs(task, None)) * sum(len(initializations(task, s)) for s in SPLITS)
    frames = len(rows) / max(made, 1)
    return {"task": task, "measured_rollouts": made, "seconds_per_rollout": round(per_rollout, 2),
            "frames_per_rollout": round(frames, 1), "seconds_per_row": {k: round(v, 4) for k, v in per_row.items()},
            "rollouts": n, "rows": round(n * frames), "render_s": round(n * per_rollout),
            "features_s": round(n * frames * sum(per_row.values()))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_policy_frames",
                                     description="Natural frames of the published image policies' rollouts.")
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    parser.add_argument("--split", choices=SPLITS, action="append", help="repeatable; default all three")
    parser.add_argument("--limit", type=int, default=None, help="make at most this many rollouts per task")
    parser.add_argument("--bank", choices=BANKS, default="v1",
                        help="the bank version whose initializations the policies run from (version 2's "
                             "confirm differs from version 1's)")
    parser.add_argument("--work", type=Path, default=None, help="work directory (default under var/)")
    parser.add_argument("--estimate", type=int, default=None, metavar="N",
                        help="measure N dev rollouts per task (and the features of their frames) in a "
                             "scratch --work directory and print the whole chain's one-core cost")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.estimate is not None:
        if args.work is None:
            parser.error("--estimate needs a scratch --work directory")
        for task in args.task or TASKS:
            print(json.dumps(measure(task, args.work / task, args.estimate)), flush=True)
        return 0
    for task in args.task or TASKS:
        work = args.work / task if args.work else None
        made = run_frames(task, splits=args.split or SPLITS, work=work, limit=args.limit, bank=args.bank,
                          log=lambda line: print(line, flush=True))
        print(json.dumps({"task": task, "rollouts_made": made}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
