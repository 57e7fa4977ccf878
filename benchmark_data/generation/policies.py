"""Training the version-1 frozen policies (one agent-view camera, trained end to end): one BC-RNN
image policy per (mechanism, experience) of the K=3 policy settings; version 2 is
`recipe_policies`'. The frozen-data readers of policies find and read them back.

Files in `policies/<mechanism>/<experience_id>/`:
- `weights.pt`: the network's state dict (`torch.save`; load with `weights_only=True`);
- `spec.json`: the network and training spec (`simulator.policy_model.PolicySpec`);
- `training.json`: how it was made: demonstration plans (layout, appearance
  draw), tries, the SHA-256 of the training arrays, the training curve,
  wall time, code version and package versions.

`train_policy` regenerates a policy from the library alone; training is
deterministic for a given spec, so the same command gives the same weights.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmark_data.library import read_experiences
from benchmark_data.policy_files import POLICY_MECHANISMS, policy_dir, read_training
from benchmark_data.query_sets import N_DRAWS
from benchmark_data.registry import LIBRARY_IDS, Mechanism, UnknownMechanism
from expaudit.errors import InternalError, InvalidInput, UnknownName
from simulator import policy_rollout
from simulator.appearance import sample_draw
from simulator.door_expert import DoorStyle
from simulator.door_policy_demos import collect_door_demos
from simulator.door_scenes import QUERY_SET_SEEDS as DOOR_QUERY_SETS
from simulator.door_scenes import DoorLayout, door_query_states
from simulator.door_sim import DoorSim
from simulator.policy_camera import PolicyCamera
from simulator.policy_executor import load_actor, make_camera
from simulator.policy_model import PolicySpec, save_policy, train
from simulator.policy_rollout import noise_for, run_episode
from simulator.provenance import policy_code_version, policy_package_versions
from simulator.stack_scenes import QUERY_SET_SEEDS as STACK_QUERY_SETS
from simulator.stack_scenes import StackLayout
from simulator.stack_scenes import query_states as stack_query_states
from simulator.stack_expert import StackStyle
from simulator.stack_policy_demos import collect_demos as collect_stack_demos
from simulator.stack_sim import StackSim

N_DEMOS = {"stack": 80, "door": 80}
"""Successful demonstrations each policy is trained on, per task."""
TRAINING_STEPS = {"stack": (4000, 6000), "door": (3000, 4000)}
"""(encoder pretraining, behaviour cloning) steps per task. Door episodes are longer, so its
policies get fewer steps to fit the same CPU budget; each policy's spec.json records its own."""
LOG_EVERY = 500
"""Training steps between progress lines."""


class UnknownExperience(UnknownName, KeyError):
    """An experience id that is not in the task's library."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BadDraw(InvalidInput, ValueError):
    """An appearance draw outside 0 to N_DRAWS - 1."""


class UnknownPolicyQuerySet(UnknownName, KeyError):
    """A query set a policy is evaluated on that its task does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DemonstrationShortfall(InternalError, RuntimeError):
    """The expert recorded fewer successful demonstrations than a policy needs."""


def experience_scene(task: str, experience_id: str, root=None):
    """(base layout, style) of an experience, from its library: where and how its demonstrations
    are recorded."""
    frame = read_experiences(LIBRARY_IDS[task], root).set_index("experience_id")
    if experience_id not in frame.index:
        raise UnknownExperience(f"experience_id {experience_id!r} is not in library {LIBRARY_IDS[task]!r}")
    row = frame.loc[experience_id]
    if task == "stack":
        return StackLayout.from_dict(json.loads(row.base_layout)), StackStyle.from_dict(json.loads(row.style))
    return DoorLayout.from_dict(json.loads(row.base_layout)), DoorStyle(**json.loads(row.style))


def demos_sha256(demos, *, images: bool = True) -> str:
    """SHA-256 over every training array, in order (images, low-dim observations, actions).

    With `images=False` the renders are left out: the scripted demonstrations do
    not read the camera, so that hash is the same on every machine with the
    pinned BLAS kernel, while the renders follow the machine's software
    renderer (docs/data.md, "What reproduces where").
    """
    h = hashlib.sha256()
    for demo in demos:
        arrays = (demo.images,) if images else ()
        for array in arrays + (demo.eef_pos, demo.gripper_qpos, demo.actions):
            h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def record_training_demos(task: str, mechanism: str, experience_id: str, n_demos: int,
                          image_size: int, root=None):
    """The demonstrations a policy is cloned from; returns (demos, plans kept, tries).

    A pure function of its arguments and the library: `train_policy` records
    them, and the same call regenerates them bit for bit (their SHA-256 is
    in each policy's training.json).
    """
    if mechanism not in {m.value for m in POLICY_MECHANISMS}:
        raise UnknownMechanism(f"mechanism must be one of {[m.value for m in POLICY_MECHANISMS]}, "
                               f"got {mechanism!r}")
    base, style = experience_scene(task, experience_id, root)
    randomized = mechanism == Mechanism.POLICY_DR.value
    if task == "stack":
        sim, collect_demos = StackSim(), collect_stack_demos
    else:
        sim, collect_demos = DoorSim(), collect_door_demos
    camera = PolicyCamera(sim, task=task, size=image_size)
    try:
        return collect_demos(sim, camera, experience_id, base, style, n_demos, randomized)
    finally:
        camera.close()


def train_policy(task: str, mechanism: str, experience_id: str, root=None, *, spec=None,
                 n_demos: int | None = None, log: Callable[[str], None] = lambda s: None) -> Path:
    """Record the demonstrations, train, and write the policy's frozen files; returns its directory."""
    if spec is None:
        pretrain, clone = TRAINING_STEPS[task]
        spec = PolicySpec(pretrain_steps=pretrain, train_steps=clone)
    n_demos = n_demos or N_DEMOS[task]
    began = time.time()
    demos, plans, tries = record_training_demos(task, mechanism, experience_id, n_demos,
                                                spec.image_size, root)
    if len(demos) < n_demos:
        raise DemonstrationShortfall(f"{task} {experience_id}: only {len(demos)} of {tries} demonstrations "
                                     f"succeeded, {n_demos} needed")
    demo_s = time.time() - began
    log(f"{mechanism} {experience_id}: {len(demos)} demonstrations ({tries} tries, "
        f"{sum(len(d) for d in demos)} frames) in {demo_s:.0f} s; training {spec.train_steps} steps")
    def progress(step: int, loss: float) -> None:
        if step % LOG_EVERY == 0:
            stage = "encoder pretraining" if step < 0 else "behaviour cloning"
            total = spec.pretrain_steps if step < 0 else spec.train_steps
            log(f"{mechanism} {experience_id}: {stage} step {abs(step)}/{total}, loss {loss:.4f}")

    algo, curve = train(demos, spec, log=progress)
    out = policy_dir(mechanism, experience_id, root)
    save_policy(algo, spec, out)
    record = {
        "task": task, "mechanism": mechanism, "experience_id": experience_id,
        "n_demos": len(demos), "tries": tries, "frames": int(sum(len(d) for d in demos)),
        "demos": [{"index": p.index, "layout": p.layout.to_dict(), "draw_key": p.draw_key,
                   "draw": p.draw} for p in plans],
        "demos_sha256": demos_sha256(demos),
        "demos_low_dim_sha256": demos_sha256(demos, images=False),
        "curve": [{"step": s, "loss": round(l, 6)} for s, l in curve],
        "demo_wall_s": round(demo_s, 1), "train_wall_s": round(time.time() - began - demo_s, 1),
        "weights_sha256": hashlib.sha256((out / "weights.pt").read_bytes()).hexdigest(),
        "code_version": policy_code_version(str(out)),
        "packages": json.loads(policy_package_versions("cpu")),
    }
    (out / "training.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return out


def evaluate_policy(mechanism: str, experience_id: str, on: str = "train", *, draw: int = 0, seed: int = 0,
                    limit: int | None = None, root=None) -> dict[str, tuple[int, int]]:
    """Closed-loop success of one frozen policy, for checking a policy, not for the published cells.

    `on="train"`: its own demonstration layouts, each under the appearance it was
    recorded with; otherwise a query set's physical states under appearance draw
    `draw`. Episodes are the executor's (`simulator.policy_rollout`, horizon and
    noise of `seed`). Returns {group: (successes, episodes)}, grouped by layout
    level for a query set and as "train" for the demonstrations.
    """
    if not 0 <= draw < N_DRAWS:
        raise BadDraw(f"draw must be 0-{N_DRAWS - 1}, got {draw}")
    record = read_training(mechanism, experience_id, root)
    task = record["task"]
    if task == "stack":
        Layout, query_states, Sim, known = StackLayout, stack_query_states, StackSim, STACK_QUERY_SETS
    else:
        Layout, query_states, Sim, known = DoorLayout, door_query_states, DoorSim, DOOR_QUERY_SETS
    if on != "train" and on not in known:
        raise UnknownPolicyQuerySet(f"--on: {task} has no query set {on!r}; give 'train' or one of "
                                    f"{', '.join(known)}")
    if on == "train":
        items = [(d["draw_key"], Layout.from_dict(d["layout"]), sample_draw(d["draw_key"], d["draw"]), "train")
                 for d in record.get("demos", [])]
    else:
        items = [(f"{q.state_id}-d{draw}", q.layout, sample_draw(q.state_id, draw),
                  f"level {q.layout_level}") for q in query_states(on)]
    items = items[:limit] if limit is not None else items
    actor, kind = load_actor(str(policy_dir(mechanism, experience_id, root)))
    sim = Sim()
    camera = make_camera(sim, task, kind)
    horizon = policy_rollout.HORIZON[task]  # read per call (tests shorten it)
    counts: dict[str, tuple[int, int]] = {}
    try:
        for scene_id, layout, appearance, group in items:
            result = run_episode(sim, camera, actor, lambda s, L=layout: s.restore(L), appearance,
                                 noise_for(seed, experience_id, scene_id, horizon), horizon)
            done, n = counts.get(group, (0, 0))
            counts[group] = (done + int(result.success), n + 1)
    finally:
        camera.close()
    return counts
