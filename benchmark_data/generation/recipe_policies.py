"""Training the policies of mechanism 2 (docs/policy_protocol.md), their gates and frozen files.

One policy per (mechanism, experience), made in a work folder by phases, each
skipped when its output is there, so a stopped run resumes where it stopped
(the folder's `work.json` refuses a run begun with other settings):

1. `record_demos`: the experience's demonstrations over layout levels 0-2
   (`simulator.recipe_demos`, chunks of `DEMO_CHUNK` plans in `demos/`), checked
   against every query and validation set;
2. `train`: the recipe (`simulator.policy_recipe.train_recipe`) -> `policy/`,
   `curves.json`;
3. `run_episodes`: the gate episodes on the validation set (`gate_items`:
   its own first demonstration layouts, then the validation states under
   draw 0 and draws 1-4), one line each in `recipe.episodes.jsonl`;
4. `freeze`: `weights.pt`, `spec.json` and `training.json` (plans, hashes,
   curves, wall times, each gate with its n and verdict, code versions)
   into `policies/<mechanism>/<experience>/` of a data root.

`scripts/policy_recipe_trial.py` runs phases 1-3 for a trial;
`expaudit data train-policies` runs all four. `go_no_go` and `check_go` are the
protocol's go / no-go, which cell generation asks before running a cell of
these policies.
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

from benchmark_data.generation.query_set_build import (
    check_not_a_query_state, check_validation_disjoint, layout_distance, validation_states,
)
from benchmark_data.policy_files import policy_dir
from benchmark_data.query_sets import N_DRAWS
from expaudit.errors import InternalError, InvalidInput

RECIPE = {"pretrain_steps": 4000, "train_steps": 20000, "crop_size": 58, "crops_per_frame": 4}
"""The recipe's settings, the same for both tasks and mechanisms (docs/policy_protocol.md:
levers 1-4; the rest are `simulator.policy_recipe.RecipeSpec`'s defaults)."""
N_DEMOS = 240
"""Successful demonstrations per policy (lever 2's first choice)."""
DEMO_CHUNK = 40
"""Demonstration plans recorded per saved chunk."""
VALIDATION = {"stack": "stack-val", "door": "door-val"}
"""The validation query set every gate is measured on, per task."""
GATE_SEED = 0
"""Execution-noise seed of the gate episodes."""
OWN_EPISODES = 20
"""Own demonstration layouts the first gate runs (n >= 20)."""
GATE_BARS = {"own": 0.8, "draw 0": 0.5, "draws 1-4": 0.2, "draw gap": 0.1}
"""The protocol's bars: success on its own layouts (both mechanisms), draw 0 and draws 1-4
(Policy), the largest gap between draw 0 and draws 1-4 (Policy+DR)."""
GATE_MIN_N = {"own": 20, "draw 0": 40, "draws 1-4": 160, "draw gap": 200}
"""Episodes a gate needs to count: fewer (a smoke run) never pass."""
GO_BAR = 0.2
"""Validation random success of the three retrained Stack Policy policies below which no cell
of the new policies is generated (the protocol's go / no-go)."""
TRAINING_SOURCES = ("simulator/policy_recipe.py", "simulator/wrist_camera.py", "simulator/recipe_demos.py",
                    "simulator/demo_recording.py", "simulator/policy_model.py", "simulator/policy_camera.py",
                    "simulator/policy_rollout.py", "benchmark_data/generation/recipe_policies.py")
"""Files whose code makes a policy and its gate numbers; their hash goes into training.json."""
REPO = Path(__file__).resolve().parents[2]
Log = Callable[[str], None]


def recipe_spec(**overrides):
    """The recipe's `RecipeSpec`, with `overrides` (small-scale runs and trials)."""
    from simulator.policy_recipe import RecipeSpec

    return RecipeSpec(**{**RECIPE, **overrides})


def training_sources_sha256() -> str:
    """16 hex digits over `TRAINING_SOURCES`: which code trained a policy and measured its gates."""
    h = hashlib.sha256()
    for name in TRAINING_SOURCES:
        h.update(name.encode())
        h.update((REPO / name).read_bytes())
    return h.hexdigest()[:16]


def sim_class(task: str):
    """The task's simulator class (imported here: MuJoCo loads only when a phase runs)."""
    if task == "stack":
        from simulator.stack_sim import StackSim

        return StackSim
    from simulator.door_sim import DoorSim

    return DoorSim


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
    from benchmark_data.generation.policies import experience_scene
    from simulator.demo_recording import record_demo
    from simulator.policy_model import Demo
    from simulator.recipe_demos import demo_task, recipe_plans
    from simulator.wrist_camera import DualCamera

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
    from simulator.policy_recipe import RecipePolicy, train_recipe

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
    from simulator.appearance import sample_draw

    items = [("own", p.draw_key, p.layout, sample_draw(p.draw_key, p.draw)) for p in kept_plans[:own]]
    chosen = validation_states(VALIDATION[task])[:states]
    for draw in range(N_DRAWS):
        group = "draw 0" if draw == 0 else "draws 1-4"
        items += [(group, f"{s.state_id}-d{draw}", s.layout, sample_draw(s.state_id, draw)) for s in chosen]
    return items


def read_episodes(path: Path, seed: int) -> dict[str, dict]:
    """Episodes already run (scene id -> row) of an episodes file; none when it is absent. Every
    row must be of noise seed `seed` (rows written before rows named their seed count as it)."""
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    other = next((row for row in rows if row.get("seed", seed) != seed), None)
    if other is not None:
        raise InvalidInput(f"{path}: episode {other['scene_id']} has seed {other['seed']}, not {seed}")
    return {row["scene_id"]: row for row in rows}


def run_episodes(task: str, experience_id: str, items, camera, actor, seed: int, path: Path,
                 on_group: Callable[[dict], None] = lambda episodes: None) -> dict[str, dict]:
    """Run the episodes of `items` not yet in `path`, appending each as it ends; `on_group` is
    called with every episode so far after each group of `items`."""
    from simulator.policy_rollout import HORIZON, noise_for, run_episode

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


def summarise(episodes: dict, items) -> dict:
    """Successes and episodes per group, and per validation layout level."""
    groups: dict[str, list[int]] = {}
    levels: dict[str, list[int]] = {}
    for group, scene_id, _, _ in items:
        if scene_id not in episodes:
            continue
        success = int(episodes[scene_id]["success"])
        g = groups.setdefault(group, [0, 0])
        g[0] += success
        g[1] += 1
        if group != "own":
            level = levels.setdefault(f"level {int(scene_id.split('-s')[1][:2]) // 10}", [0, 0])
            level[0] += success
            level[1] += 1
    return {"groups": groups, "validation_levels": levels}


def judge_gates(mechanism: str, groups: dict[str, list[int]]) -> dict[str, dict]:
    """Each gate of the protocol for `mechanism`: its measured value with n, its bar, passed or not
    (a gate with fewer episodes than `GATE_MIN_N` does not pass)."""
    def rate(name):
        s, n = groups[name]
        return s / n

    def gate(name, value, n, bar):
        passed = value >= GATE_BARS[name] if bar == "at_least" else value <= GATE_BARS[name] + 1e-12
        return {"value": round(value, 4), "n": n, bar: GATE_BARS[name], "min_n": GATE_MIN_N[name],
                "passed": bool(passed and n >= GATE_MIN_N[name])}

    gates = {"own": gate("own", rate("own"), groups["own"][1], "at_least")}
    if mechanism == "policy":
        for name in ("draw 0", "draws 1-4"):
            gates[name] = gate(name, rate(name), groups[name][1], "at_least")
    else:
        gates["draw gap"] = gate("draw gap", abs(rate("draw 0") - rate("draws 1-4")),
                                 groups["draw 0"][1] + groups["draws 1-4"][1], "at_most")
    return gates


def validation_rate(record: dict) -> float:
    """Validation random success of a frozen policy: its successes over the validation scenes
    (every draw), from its training.json."""
    groups = record["validation"]["groups"]
    return (groups["draw 0"][0] + groups["draws 1-4"][0]) / (groups["draw 0"][1] + groups["draws 1-4"][1])


def go_no_go(records: list[dict]) -> tuple[float | None, bool]:
    """(validation random success of the Stack Policy policies, whether generating cells may go):
    go when all three are trained with their gates measured and the mean reaches `GO_BAR`."""
    stack = [r for r in records if r["task"] == "stack" and r["mechanism"] == "policy" and "gates" in r]
    if not stack:
        return None, False
    mean = sum(validation_rate(r) for r in stack) / len(stack)
    return mean, len(stack) == 3 and mean >= GO_BAR


def staged_records(root) -> list[dict]:
    """The training.json of every mechanism-2 policy under `root`."""
    from benchmark_data.paths import root_or_default

    records = []
    for path in sorted((root_or_default(root) / "policies").glob("*/*/training.json")):
        record = json.loads(path.read_text())
        if "gates" in record:
            records.append(record)
    return records


def check_go(root) -> None:
    """Raise `InvalidInput` unless the go / no-go under `root` says go (cells of mechanism-2
    policies are generated only then, as pre-registered)."""
    mean, go = go_no_go(staged_records(root))
    if not go:
        state = ("no Stack Policy policy with gates" if mean is None
                 else f"validation random success {mean:.3f} of the Stack Policy policies trained")
        raise InvalidInput(f"no cell of the new policies before the go / no-go says go "
                           f"(docs/policy_protocol.md): {state}; all three at >= {GO_BAR} are needed "
                           f"(scripts/policy_gates.py)")


# ---- phase 4: the frozen files -------------------------------------------------------------
def freeze(task: str, mechanism: str, experience_id: str, workdir: Path, demos: Demos, policy,
           summary: dict, *, root=None) -> Path:
    """Write the policy's frozen files into `root` (training.json: how it was made and its gates)."""
    from benchmark_data.generation.policies import demos_sha256
    from simulator.provenance import policy_code_version, policy_package_versions

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
    import torch

    from simulator.policy_recipe import RecipeActor
    from simulator.wrist_camera import DualCamera

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
