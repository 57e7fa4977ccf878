#!/usr/bin/env python
"""Train one policy with the trial recipe and measure it on the validation set (resumable).

    scripts/policy_recipe_trial.py stack-e000 --workdir DIR [--demos 240] [--steps 20000]
    scripts/policy_recipe_trial.py stack-e000 --workdir DIR --frozen   # the published policy, same episodes

A trial of the recipe in docs/policy_protocol.md (levers 1-3: wrist camera
with its own encoder, demonstrations over layout levels 0-2, cloning on
cached features), never a published policy: everything is written under
`--workdir`, and the frozen policies and cells are only read. Phases, each
skipped when its output exists, so a killed run resumes where it stopped:

1. demonstrations (`runner.recipe_demos`, recorded in chunks of `CHUNK` plans,
   both cameras side by side), checked against every query and validation set;
2. training (`runner.policy_recipe.train_recipe`) -> `policy/`;
3. episodes (`runner.policy_rollout`, the task's horizon, noise seed `--seed`):
   its own first `--own` demonstration layouts under their recorded draw, then
   the validation states under draw 0, then draws 1-4. Each episode is
   appended to `episodes.jsonl` as it ends; `summary.json` is rewritten after
   each group.

`--frozen` runs the same episodes with the published policy of the
experience (its own camera and encoder, its own first demonstrations), for
comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import runner  # noqa: E402,F401  (kernel pins and the headless renderer before MuJoCo loads)
import numpy as np  # noqa: E402

from benchmark_data.generation.query_set_build import (  # noqa: E402
    check_not_a_query_state, check_validation_disjoint, validation_states,
)
from benchmark_data.query_sets import N_DRAWS, VALIDATION_TASK  # noqa: E402

CHUNK = 40
"""Demonstration plans recorded per saved chunk."""
VALIDATION = {"stack": "stack-val", "door": "door-val"}


def log(workdir: Path, line: str) -> None:
    stamped = f"{time.strftime('%H:%M:%S')} {line}"
    print(stamped, flush=True)
    with open(workdir / "log.txt", "a") as f:
        f.write(stamped + "\n")


def _sim_class(task: str):
    if task == "stack":
        from runner.stack_sim import StackSim

        return StackSim
    from runner.door_sim import DoorSim

    return DoorSim


# ---- phase 1: demonstrations ---------------------------------------------------------------
def record_demos(task: str, experience_id: str, mechanism: str, n: int, workdir: Path):
    """Successful demonstrations (loaded from chunks when already recorded) and their plans."""
    from benchmark_data.generation.policies import _experience
    from runner.demo_recording import record_demo
    from runner.policy_model import Demo
    from runner.recipe_demos import demo_task, recipe_plans
    from runner.wrist_camera import DualCamera

    plans = recipe_plans(task, experience_id, 3 * n, mechanism == "policy_dr")
    check_not_a_query_state(task, [p.layout for p in plans])
    check_validation_disjoint(VALIDATION[task], [p.layout for p in plans], [p.draw_key for p in plans])
    out = workdir / "demos"
    out.mkdir(parents=True, exist_ok=True)
    base, style = _experience(task, experience_id)
    sim = camera = None
    demos, kept = [], []
    fields = ("images", "eef_pos", "gripper_qpos", "actions", "object_state")
    for c in range(0, len(plans), CHUNK):
        if len(demos) >= n:
            break
        path = out / f"chunk{c // CHUNK:03d}.npz"
        if not path.exists():
            if sim is None:
                sim = _sim_class(task)()
                camera = DualCamera(sim, task=task)
            chunk = {}
            began = time.time()
            for plan in plans[c:c + CHUNK]:
                demo, ok = record_demo(demo_task(task), sim, camera, plan, style, experience_id)
                if ok:
                    chunk[plan.index] = demo
            arrays = {f"{i}.{f}": getattr(d, f) for i, d in chunk.items() for f in fields}
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, indices=np.array(sorted(chunk), dtype=int), **arrays)
            tmp.replace(path)
            log(workdir, f"demos chunk {c // CHUNK}: {len(chunk)}/{len(plans[c:c + CHUNK])} succeeded "
                         f"({time.time() - began:.0f} s)")
        with np.load(path) as z:
            for i in z["indices"]:
                if len(demos) < n:
                    demos.append(Demo(**{f: z[f"{i}.{f}"] for f in fields}))
                    kept.append(plans[int(i)])
    if camera is not None:
        camera.close()
    if len(demos) < n:
        raise SystemExit(f"only {len(demos)} of {len(plans)} demonstration plans succeeded, {n} needed")
    return demos, kept, kept[-1].index + 1


# ---- phase 3: episodes ---------------------------------------------------------------------
def episode_items(task: str, kept_plans, own: int, states: int = 40):
    """(group, scene id, layout, appearance draw) of every episode, in order; `states` < 40 keeps
    the first states only (level-major, so a smoke run, not a measurement)."""
    from runner.appearance import sample_draw

    items = [("own", p.draw_key, p.layout, sample_draw(p.draw_key, p.draw)) for p in kept_plans[:own]]
    states = validation_states(VALIDATION[task])[:states]
    for draw in range(N_DRAWS):
        group = "draw 0" if draw == 0 else "draws 1-4"
        items += [(group, f"{s.state_id}-d{draw}", s.layout, sample_draw(s.state_id, draw)) for s in states]
    return items


def summarise(episodes: dict, items) -> dict:
    groups: dict[str, list[int]] = {}
    levels: dict[str, list[int]] = {}
    for group, scene_id, layout, _ in items:
        if scene_id not in episodes:
            continue
        g = groups.setdefault(group, [0, 0])
        g[0] += int(episodes[scene_id]["success"])
        g[1] += 1
        if group != "own":
            level = f"level {int(scene_id.split('-s')[1][:2]) // 10}"
            lv = levels.setdefault(level, [0, 0])
            lv[0] += int(episodes[scene_id]["success"])
            lv[1] += 1
    return {"groups": groups, "validation_levels": levels}


def run_episodes(task: str, experience_id: str, items, camera, actor, seed: int, workdir: Path,
                 name: str, meta: dict) -> dict:
    from runner.policy_rollout import HORIZON, noise_for, run_episode

    path = workdir / f"{name}.episodes.jsonl"
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            done[row["scene_id"]] = row
    horizon = HORIZON[task]
    sim = camera.sim
    last_group = None
    for group, scene_id, layout, draw in items:
        if group != last_group and last_group is not None:
            write_summary(workdir, name, meta, done, items)
        last_group = group
        if scene_id in done:
            continue
        result = run_episode(sim, camera, actor, lambda s, L=layout: s.restore(L), draw,
                             noise_for(seed, experience_id, scene_id, horizon), horizon)
        row = {"scene_id": scene_id, "group": group, "success": bool(result.success), "steps": result.steps}
        done[scene_id] = row
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
    return write_summary(workdir, name, meta, done, items)


def write_summary(workdir: Path, name: str, meta: dict, episodes: dict, items) -> dict:
    summary = {**meta, **summarise(episodes, items)}
    tmp = workdir / f"{name}.summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    tmp.replace(workdir / f"{name}.summary.json")
    log(workdir, f"{name}: {summary['groups']}")
    return summary


RECIPE_SOURCES = ("runner/policy_recipe.py", "runner/wrist_camera.py", "runner/recipe_demos.py",
                  "runner/demo_recording.py", "runner/policy_model.py", "runner/policy_camera.py",
                  "runner/policy_rollout.py", "scripts/policy_recipe_trial.py")
"""Files whose code makes a trial's numbers; their hash is recorded with the results."""


def sources_sha256() -> str:
    import hashlib

    h = hashlib.sha256()
    for name in RECIPE_SOURCES:
        h.update(name.encode())
        h.update((REPO / name).read_bytes())
    return h.hexdigest()[:16]


def code_version() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experience_id", help="a Stack or Door experience of the K=3 policy settings")
    parser.add_argument("--mechanism", default="policy", choices=("policy", "policy_dr"))
    parser.add_argument("--workdir", required=True, help="scratch folder for demos, policy and episodes")
    parser.add_argument("--demos", type=int, default=240, help="successful demonstrations")
    parser.add_argument("--steps", type=int, default=20000, help="behaviour-cloning steps")
    parser.add_argument("--pretrain-steps", type=int, default=4000, help="encoder pretraining steps per camera")
    parser.add_argument("--own", type=int, default=20, help="own demonstration layouts to run")
    parser.add_argument("--seed", type=int, default=0, help="execution-noise seed of the episodes")
    parser.add_argument("--states", type=int, default=40, help="validation states per draw (40: all; fewer: smoke run)")
    parser.add_argument("--frozen", action="store_true", help="run the episodes with the published policy")
    parser.add_argument("--crop", type=int, default=0,
                        help="lever 4: side of the agent view's random crops in px (robomimic's default is "
                             "90%% of the image: 58 for 64); 0: no crop")
    parser.add_argument("--crops", type=int, default=4, help="random crops cached per agent-view frame")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    task = args.experience_id.split("-")[0]
    if VALIDATION.get(task) not in VALIDATION_TASK:
        raise SystemExit(f"experience {args.experience_id!r}: task {task!r} has no validation set")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    meta = {"experience_id": args.experience_id, "mechanism": args.mechanism, "seed": args.seed,
            "validation_set": VALIDATION[task], "commit": code_version(), "sources_sha256": sources_sha256(),
            "command": "scripts/policy_recipe_trial.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    if args.frozen:
        return run_frozen(task, args, workdir, meta)
    from runner.policy_recipe import RecipeActor, RecipePolicy, RecipeSpec, train_recipe
    from runner.wrist_camera import DualCamera

    demos, kept, tries = record_demos(task, args.experience_id, args.mechanism, args.demos, workdir)
    meta.update({"demos": len(demos), "demo_tries": tries, "frames": int(sum(len(d) for d in demos))})
    policy_path = workdir / "policy"
    spec = RecipeSpec(train_steps=args.steps, pretrain_steps=args.pretrain_steps, crop_size=args.crop,
                      crops_per_frame=args.crops if args.crop else 1)
    if not (policy_path / "weights.pt").exists():
        log(workdir, f"training: {len(demos)} demos ({tries} tries, {meta['frames']} frames), {spec.to_json()}")
        began = time.time()
        policy, curves = train_recipe(task, demos, spec, log=lambda line: log(workdir, line))
        (workdir / "curves.json").write_text(json.dumps({**curves, "train_wall_s": round(time.time() - began)}) + "\n")
        policy.save(policy_path)
        log(workdir, f"trained in {time.time() - began:.0f} s")
    del demos
    policy = RecipePolicy.load(policy_path)
    meta["spec"] = json.loads(policy.spec.to_json())
    curves = json.loads((workdir / "curves.json").read_text())
    meta["final_losses"] = {k: v[-1][1] for k, v in curves.items() if isinstance(v, list)}
    meta["train_wall_s"] = curves.get("train_wall_s")
    sim = _sim_class(task)()
    camera = DualCamera(sim, task=task)
    try:
        run_episodes(task, args.experience_id, episode_items(task, kept, args.own, args.states), camera, RecipeActor(policy),
                     args.seed, workdir, "recipe", meta)
    finally:
        camera.close()
    return 0


def run_frozen(task: str, args, workdir: Path, meta: dict) -> int:
    """The published policy of the experience on the same kinds of episodes."""
    from benchmark_data.policy_files import policy_dir, read_training
    from runner.demo_recording import DemoPlan
    from runner.policy_camera import PolicyCamera
    from runner.policy_model import PolicyActor, load_policy

    record = read_training(args.mechanism, args.experience_id)
    layout_cls = _sim_layout(task)
    kept = [DemoPlan(d["index"], layout_cls.from_dict(d["layout"]), d["draw_key"], d["draw"])
            for d in record["demos"]]
    algo, spec = load_policy(policy_dir(args.mechanism, args.experience_id))
    sim = _sim_class(task)()
    camera = PolicyCamera(sim, task=task, size=spec.image_size)
    try:
        run_episodes(task, args.experience_id, episode_items(task, kept, args.own, args.states), camera, PolicyActor(algo),
                     args.seed, workdir, "frozen", {**meta, "policy": "published"})
    finally:
        camera.close()
    return 0


def _sim_layout(task: str):
    if task == "stack":
        from runner.scenes import StackLayout

        return StackLayout
    from runner.door_scenes import DoorLayout

    return DoorLayout


if __name__ == "__main__":
    sys.exit(main())
