#!/usr/bin/env python
"""Train one policy with the trial recipe and measure it on the validation set (resumable).

    scripts/policy_recipe_trial.py stack-e000 --workdir DIR [--demos 240] [--steps 20000]
    scripts/policy_recipe_trial.py stack-e000 --workdir DIR --frozen   # the published policy, same episodes

A trial of the recipe in docs/policy_protocol.md (levers 1-3: wrist camera
with its own encoder, demonstrations over layout levels 0-2, cloning on
cached features; lever 4 with `--crop`), never a published policy:
everything is written under `--workdir`, and the frozen policies and cells
are only read. The phases are `benchmark_data.generation.recipe_policies`'
first three (demonstrations, training, gate episodes), each skipped when its
output exists, so a killed run resumes where it stopped; episodes run with
noise seed `--seed`, one line each in `recipe.episodes.jsonl` (seed 0; another
seed `recipe-seedN.episodes.jsonl`), and the summary beside it is rewritten
after each group; the folder's `work.json` refuses a run with other settings. With the recipe's
settings (`--crop 58`) a trial's folder is the work folder of
`expaudit data train-policies`, which freezes its policy without retraining.

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

import simulator  # noqa: E402,F401  (kernel pins and the headless renderer before MuJoCo loads)

from benchmark_data.generation import recipe_policies  # noqa: E402
from benchmark_data.generation.recipe_gates import VALIDATION, summarise  # noqa: E402
from benchmark_data.query_sets import VALIDATION_TASK  # noqa: E402


def log(workdir: Path, line: str) -> None:
    stamped = f"{time.strftime('%H:%M:%S')} {line}"
    print(stamped, flush=True)
    with open(workdir / "log.txt", "a") as f:
        f.write(stamped + "\n")


def write_summary(workdir: Path, name: str, meta: dict, episodes: dict, items) -> dict:
    summary = {**meta, **summarise(episodes, items)}
    tmp = workdir / f"{name}.summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    tmp.replace(workdir / f"{name}.summary.json")
    log(workdir, f"{name}: {summary['groups']}")
    return summary


def sources_sha256() -> str:
    """Hash of the code that makes a trial's numbers: the training sources and this script."""
    import hashlib

    h = hashlib.sha256(recipe_policies.training_sources_sha256().encode())
    h.update(Path(__file__).read_bytes())
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
    from simulator.policy_recipe import RecipeActor
    from simulator.wrist_camera import DualCamera

    say = lambda line: log(workdir, line)  # noqa: E731
    spec = recipe_policies.recipe_spec(train_steps=args.steps, pretrain_steps=args.pretrain_steps,
                                       crop_size=args.crop, crops_per_frame=args.crops if args.crop else 1)
    recipe_policies.open_work(workdir, recipe_policies.work_record(
        task, args.experience_id, args.mechanism, args.demos, recipe_policies.DEMO_CHUNK, spec))
    demos = recipe_policies.record_demos(task, args.experience_id, args.mechanism, args.demos, workdir, log=say)
    kept = demos.plans
    meta.update({"demos": len(demos.demos), "demo_tries": demos.tries,
                 "frames": int(sum(len(d) for d in demos.demos))})
    policy, _ = recipe_policies.train(task, demos, spec, workdir, log=say)
    del demos
    meta["spec"] = json.loads(policy.spec.to_json())
    curves = json.loads((workdir / "curves.json").read_text())
    meta["final_losses"] = {k: v[-1][1] for k, v in curves.items() if isinstance(v, list)}
    meta["train_wall_s"] = curves.get("train_wall_s")
    camera = DualCamera(recipe_policies.sim_class(task)(), task=task)
    try:
        run_episodes(task, args.experience_id, recipe_policies.gate_items(task, kept, args.own, args.states),
                     camera, RecipeActor(policy), args.seed, workdir,
                     "recipe" if args.seed == 0 else f"recipe-seed{args.seed}", meta)
    finally:
        camera.close()
    return 0


def run_episodes(task: str, experience_id: str, items, camera, actor, seed: int, workdir: Path,
                 name: str, meta: dict) -> dict:
    """The episodes of `items` into `NAME.episodes.jsonl`, `NAME.summary.json` after each group."""
    episodes = recipe_policies.run_episodes(
        task, experience_id, items, camera, actor, seed, workdir / f"{name}.episodes.jsonl",
        on_group=lambda done: write_summary(workdir, name, meta, done, items))
    return write_summary(workdir, name, meta, episodes, items)


def run_frozen(task: str, args, workdir: Path, meta: dict) -> int:
    """The published policy of the experience on the same kinds of episodes."""
    from benchmark_data.policy_files import policy_dir, read_training
    from simulator.demo_recording import DemoPlan
    from simulator.policy_executor import load_actor, make_camera

    record = read_training(args.mechanism, args.experience_id)
    layout_cls = _sim_layout(task)
    kept = [DemoPlan(d["index"], layout_cls.from_dict(d["layout"]), d["draw_key"], d["draw"])
            for d in record["demos"]]
    actor, size = load_actor(str(policy_dir(args.mechanism, args.experience_id)))
    camera = make_camera(recipe_policies.sim_class(task)(), task, size)
    try:
        run_episodes(task, args.experience_id, recipe_policies.gate_items(task, kept, args.own, args.states),
                     camera, actor,
                     args.seed, workdir, "frozen" if args.seed == 0 else f"frozen-seed{args.seed}",
                     {**meta, "policy": "published"})
    finally:
        camera.close()
    return 0


def _sim_layout(task: str):
    if task == "stack":
        from simulator.stack_scenes import StackLayout

        return StackLayout
    from simulator.door_scenes import DoorLayout

    return DoorLayout


if __name__ == "__main__":
    sys.exit(main())
