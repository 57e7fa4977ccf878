"""Training the policies of mechanism 2 (docs/policy_protocol.md), their gates and frozen files.

One policy per (mechanism, experience), made in a work folder by phases (`record_demos`,
`train`, `run_episodes`, `freeze`), each skipped when its output is there, so a stopped run
resumes (docs/data.md, "Regenerating a policy, running a cell"). `expaudit data
train-policies` runs all four; the gates and the go / no-go are `recipe_gates`'. This module
loads the simulator and torch: its callers load it when a command needs them.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmark_data.generation.policies import demos_sha256, experience_scene
from benchmark_data.generation.query_set_build import (
    check_not_a_query_state, check_validation_disjoint, layout_distance, validation_states,
)
from benchmark_data.generation.recipe_gates import (
    GATE_SEED, OWN_EPISODES, VALIDATION, judge_gates, read_episodes, summarise,
)
from benchmark_data.policy_files import policy_dir
from benchmark_data.query_sets import N_DRAWS
from expaudit.errors import InternalError, InvalidInput
from simulator.appearance import sample_draw
from simulator.demo_recording import record_demo
from simulator.door_sim import DoorSim
from simulator.policy_model import Demo
from simulator.policy_recipe import RecipeActor, RecipePolicy, RecipeSpec, train_recipe
from simulator.policy_rollout import HORIZON, noise_for, run_episode
from simulator.provenance import policy_code_version, policy_package_versions
from simulator.recipe_demos import demo_task, recipe_plans
from simulator.stack_sim import StackSim
from simulator.wrist_camera import DualCamera

RECIPE = {"pretrain_steps": 4000, "train_steps": 20000, "crop_size": 58, "crops_per_frame": 4}
"""The recipe's settings, the same for both tasks and mechanisms (docs/policy_protocol.md:
levers 1-4; the rest are `simulator.policy_recipe.RecipeSpec`'s defaults)."""
N_DEMOS = 240
"""Successful demonstrations per policy (lever 2's first choice)."""
DEMO_CHUNK = 40
"""Demonstration plans recorded per saved chunk."""
TRAINING_SOURCES = ("simulator/policy_recipe.py", "simulator/wrist_camera.py", "simulator/recipe_demos.py",
                    "simulator/demo_recording.py", "simulator/policy_model.py", "simulator/policy_camera.py",
                    "simulator/policy_rollout.py", "benchmark_data/generation/recipe_policies.py",
                    "benchmark_data/generation/recipe_gates.py")
"""Files whose code makes a policy and its gate numbers; their hash goes into training.json."""
REPO = Path(__file__).resolve().parents[2]
Log = Callable[[str], None]


def recipe_spec(**overrides):
    """The recipe's `RecipeSpec`, with `overrides` (small-scale runs and trials)."""
    return RecipeSpec(**{**RECIPE, **overrides})


def training_sources_sha256() -> str:
    """16 hex digits over `TRAINING_SOURCES`: which code trained a policy and measured its gates."""
    h = hashlib.sha256()
    for name in TRAINING_SOURCES:
        h.update(name.encode())
        h.update((REPO / name).read_bytes())
    return h.hexdigest()[:16]


def sim_class(task: str):
    """The task's simulator class."""
    return StackSim if task == "stack" else DoorSim


WORK_RECORD = "work.json"
"""What a work folder is for; a resumed run must ask for the same."""


def work_record(task: str, experience_id: str, mechanism: str, n_demos: int, chunk: int, spec) -> dict:
    """What a work folder is begun for (see `open_work`)."""
    return {"task": task, "experience_id": experience_id, "mechanism": mechanism, "n_demos": n_demos,
            "chunk": chunk, "spec": json.loads(spec.to_json())}


def open_work(workdir: Path, record: dict) -> None:
    """Check `workdir` was begun for `record` (task, experience, mechanism, demonstrations, spec),
    or record it there: a folder's demonstrations, policy and episodes are only reused for the
    run that made them."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / WORK_RECORD
    if not path.exists():
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return
    stored = json.loads(path.read_text())
    for key in sorted(set(stored) | set(record)):
        if stored.get(key) != record.get(key):
            raise InvalidInput(f"work folder {workdir} was begun with {key} = {stored.get(key)!r}, "
                               f"not {record.get(key)!r}: give another --workdir")


# ---- phase 1: demonstrations ---------------------------------------------------------------
@dataclass
class Demos:
    """The kept demonstrations, their plans, the plans up to the last one kept (`tries`), and
    the recording time of the chunks (None when a chunk did not record it)."""

    demos: list
    plans: list
    tries: int
    wall_s: float | None


def record_demos(task: str, experience_id: str, mechanism: str, n: int, workdir: Path, *,
                 library_root=None, chunk: int = DEMO_CHUNK, log: Log = lambda line: None) -> Demos:
    """The first `n` successful demonstrations (chunks already recorded are read back)."""
    plans = recipe_plans(task, experience_id, 3 * n, mechanism == "policy_dr")
    check_not_a_query_state(task, [p.layout for p in plans])
    check_validation_disjoint(VALIDATION[task], [p.layout for p in plans], [p.draw_key for p in plans])
    out = workdir / "demos"
    out.mkdir(parents=True, exist_ok=True)
    _, style = experience_scene(task, experience_id, library_root)
    sim = camera = None
    demos, kept, walls = [], [], []
    fields = ("images", "eef_pos", "gripper_qpos", "actions", "object_state")
    try:
        for c in range(0, len(plans), chunk):
            if len(demos) >= n:
                break
            path = out / f"chunk{c // chunk:03d}.npz"
            if not path.exists():
                if sim is None:
                    sim = sim_class(task)()
                    camera = DualCamera(sim, task=task)
                recorded = {}
                began = time.time()
                for plan in plans[c:c + chunk]:
                    demo, ok = record_demo(demo_task(task), sim, camera, plan, style, experience_id)
                    if ok:
                        recorded[plan.index] = demo
                arrays = {f"{i}.{f}": getattr(d, f) for i, d in recorded.items() for f in fields}
                tmp = path.with_suffix(".tmp.npz")
                np.savez(tmp, indices=np.array(sorted(recorded), dtype=int),
                         wall_s=np.array(time.time() - began), **arrays)
                tmp.replace(path)
                log(f"demos chunk {c // chunk}: {len(recorded)}/{len(plans[c:c + chunk])} succeeded "
                    f"({time.time() - began:.0f} s)")
            with np.load(path) as z:
                walls.append(float(z["wall_s"]) if "wall_s" in z else None)
                for i in z["indices"]:
                    if len(demos) < n:
                        demos.append(Demo(**{f: z[f"{i}.{f}"] for f in fields}))
                        kept.append(plans[int(i)])
    finally:
        if camera is not None:
            camera.close()
    if len(demos) < n:
        raise InternalError(f"{task} {experience_id}: only {len(demos)} of {len(plans)} demonstration "
                            f"plans succeeded, {n} needed")
    wall = None if None in walls else round(sum(walls), 1)
    return Demos(demos, kept, kept[-1].index + 1, wall)


# ---- phase 2: training ---------------------------------------------------------------------
def train(task: str, demos: Demos, spec, workdir: Path, log: Log = lambda line: None):
    """(the `RecipePolicy` in `workdir/policy`, whether it was trained now); one already there must
    have `spec`. curves.json keeps the curves, wall time and the training code's hash."""
    path = workdir / "policy"
    if (path / "weights.pt").exists():
        policy = RecipePolicy.load(path)
        if policy.spec != spec:
            differ = sorted(k for k, v in vars(spec).items() if getattr(policy.spec, k) != v)
            raise InvalidInput(f"{path} was trained with another spec ({', '.join(differ)} differ): "
                               f"give another --workdir")
        return policy, False
    frames = sum(len(d) for d in demos.demos)
    log(f"training: {len(demos.demos)} demos ({demos.tries} tries, {frames} frames), {spec.to_json()}")
    began = time.time()
    policy, curves = train_recipe(task, demos.demos, spec, log=log)
    (workdir / "curves.json").write_text(json.dumps({
        **curves, "train_wall_s": round(time.time() - began),
        "trained_with": {"training_sources_sha256": training_sources_sha256()}}) + "\n")
    policy.save(path)
    log(f"trained in {time.time() - began:.0f} s")
    return policy, True


# ---- phase 3: gate episodes ----------------------------------------------------------------
def gate_items(task: str, kept_plans, own: int = OWN_EPISODES, states: int = 40) -> list[tuple]:
    """(group, scene id, layout, appearance draw) of every gate episode, in order; `states` < 40
    keeps the first validation states only (level-major: a smoke run, not a measurement)."""
    items = [("own", p.draw_key, p.layout, sample_draw(p.draw_key, p.draw)) for p in kept_plans[:own]]
    chosen = validation_states(VALIDATION[task])[:states]
    for draw in range(N_DRAWS):
        group = "draw 0" if draw == 0 else "draws 1-4"
        items += [(group, f"{s.state_id}-d{draw}", s.layout, sample_draw(s.state_id, draw)) for s in chosen]
    return items


def run_episodes(task: str, experience_id: str, items, camera, actor, seed: int, path: Path,
                 on_group: Callable[[dict], None] = lambda episodes: None) -> dict[str, dict]:
    """Run the episodes of `items` not yet in `path`, appending each as it ends; `on_group` is
    called with every episode so far after each group of `items`."""
    done = read_episodes(path, seed)
    horizon = HORIZON[task]
    last_group = None
    for group, scene_id, layout, draw in items:
        if group != last_group and last_group is not None:
            on_group(done)
        last_group = group
        if scene_id in done:
            continue
        result = run_episode(camera.sim, camera, actor, lambda s, L=layout: s.restore(L), draw,
                             noise_for(seed, experience_id, scene_id, horizon), horizon)
        row = {"scene_id": scene_id, "group": group, "seed": seed, "success": bool(result.success),
               "steps": result.steps}
        done[scene_id] = row
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
    on_group(done)
    return done


# ---- phase 4: the frozen files -------------------------------------------------------------
def freeze(task: str, mechanism: str, experience_id: str, workdir: Path, demos: Demos, policy,
           summary: dict, *, root=None) -> Path:
    """Write the policy's frozen files into `root` (training.json: how it was made and its gates)."""
    out = policy_dir(mechanism, experience_id, root)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(workdir / "policy" / "weights.pt", out / "weights.pt")
    (out / "spec.json").write_text(policy.spec.to_json() + "\n")
    curves = json.loads((workdir / "curves.json").read_text())
    gates = judge_gates(mechanism, summary["groups"])
    trained_with = curves.get("trained_with") or _trial_provenance(workdir)
    record = {
        "task": task, "mechanism": mechanism, "experience_id": experience_id,
        "n_demos": len(demos.demos), "tries": demos.tries,
        "frames": int(sum(len(d) for d in demos.demos)),
        "demos": [{"index": p.index, "layout": p.layout.to_dict(), "draw_key": p.draw_key,
                   "draw": p.draw} for p in demos.plans],
        "demos_sha256": demos_sha256(demos.demos),
        "demos_low_dim_sha256": demos_sha256(demos.demos, images=False),
        "curves": {k: [{"step": s, "loss": round(l, 6)} for s, l in v]
                   for k, v in curves.items() if isinstance(v, list)},
        "demo_wall_s": demos.wall_s, "train_wall_s": curves.get("train_wall_s"),
        "weights_sha256": hashlib.sha256((out / "weights.pt").read_bytes()).hexdigest(),
        "code_version": policy_code_version(str(out)),
        "trained_with": trained_with,
        "frozen_with": {"training_sources_sha256": training_sources_sha256()},
        "packages": json.loads(policy_package_versions("cpu")),
        "validation": {"query_set": VALIDATION[task], "seed": GATE_SEED, **summary,
                       "nearest_demo_m": nearest_demo_distances(task, demos.plans)},
        "gates": gates, "gates_passed": all(g["passed"] for g in gates.values()),
    }
    (out / "training.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return out


def _trial_provenance(workdir: Path) -> dict | None:
    """Who trained a policy in a recipe trial's folder before curves.json named it: the trial's
    command, commit and source hash (its recipe.summary.json)."""
    path = workdir / "recipe.summary.json"
    if not path.exists():
        return None
    meta = json.loads(path.read_text())
    command = re.sub(r"--workdir \S+", "--workdir WORKDIR", meta.get("command") or "")
    return {"trial": command, "commit": meta.get("commit"),
            "trial_sources_sha256": meta.get("sources_sha256")}


def nearest_demo_distances(task: str, plans) -> dict[str, float]:
    """Each validation state's distance (m) to the nearest demonstration layout of a policy."""
    return {s.state_id: round(min(layout_distance(task, s.layout, p.layout) for p in plans), 4)
            for s in validation_states(VALIDATION[task])}


def train_recipe_policy(task: str, mechanism: str, experience_id: str, workdir: Path, *, root=None,
                        library_root=None, n_demos: int = N_DEMOS, spec=None, own: int = OWN_EPISODES,
                        states: int = 40, chunk: int = DEMO_CHUNK, log: Log = lambda line: None) -> Path:
    """All four phases for one policy (resuming in `workdir`); returns its frozen directory."""

    torch.set_num_threads(1)
    spec = spec or recipe_spec()
    open_work(workdir, work_record(task, experience_id, mechanism, n_demos, chunk, spec))
    demos = record_demos(task, experience_id, mechanism, n_demos, workdir, library_root=library_root,
                         chunk=chunk, log=log)
    policy, trained_now = train(task, demos, spec, workdir, log=log)
    episodes_path = workdir / "recipe.episodes.jsonl"
    if trained_now and episodes_path.exists():  # episodes of weights no longer there
        episodes_path.replace(workdir / f"recipe.episodes.before-{int(time.time())}.jsonl")
        log("earlier gate episodes set aside: the policy was trained again")
    items = gate_items(task, demos.plans, own, states)
    camera = DualCamera(sim_class(task)(), task=task)
    try:
        episodes = run_episodes(task, experience_id, items, camera, RecipeActor(policy), GATE_SEED,
                                episodes_path,
                                on_group=lambda done: log(f"gates so far: {summarise(done, items)['groups']}"))
    finally:
        camera.close()
    return freeze(task, mechanism, experience_id, workdir, demos, policy, summarise(episodes, items), root=root)
