"""The executor of Policy and Policy+DR cells: closed-loop episodes, one per render, with provenance.

A policy cell is (mechanism, query set, experience, scene, seed): the policy
reads the camera, so every appearance draw of a state is its own episode and
`Cell.state_id` holds the scene id (state + draw). Results have the same
form and journals as Replay's (`simulator.executor.CellResult`); the code version
of a policy cell is the policy's declared mechanism version and its frozen
weights (`simulator.provenance.policy_code_version`). A policy (mechanism 2,
`simulator.policy_recipe`) reads the agent and wrist views side by side
(`simulator.wrist_camera.DualCamera`).

Cells are grouped by (mechanism, experience) so a process loads each policy
once; a group runs `envs` environments in lockstep with one batched forward
pass per control step (`simulator.policy_rollout.run_batch`). The CPU default is
one environment, which makes every cell's outcome independent of what else
runs beside it.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from expaudit.errors import InternalError, InvalidInput
from expaudit.journal import journal_keys
from simulator import policy_rollout
from simulator.appearance import sample_draw
from simulator.door_sim import DoorSim
from simulator.executor import Cell, CellResult, NotInWorld, journaled
from simulator.policy_recipe import RecipeActor, RecipePolicy
from simulator.policy_rollout import noise_for, run_batch
from simulator.provenance import policy_code_version, policy_mechanism_of, policy_package_versions
from simulator.stack_sim import StackSim
from simulator.wrist_camera import DualCamera

POLICY_MECHANISM_NAMES = ("policy", "policy_dr")
CHUNK_CELLS = 20
"""Cells per unit of work handed to a worker process (all of one experience)."""


class ExecutorMisuse(InternalError, ValueError):
    """Cells or options a `PolicyExecutor` cannot take (mixed experiences, another task, no envs):
    its callers check what they hand it, so this is a bug."""


@dataclass(frozen=True)
class PolicyScene:
    """One render of a physical state: the layout to restore and the appearance draw."""

    scene_id: str
    state_id: str
    draw: int
    layout: object  # simulator.stack_scenes.StackLayout or simulator.door_scenes.DoorLayout


@dataclass(frozen=True)
class PolicyWorld:
    """What a worker needs: the task, the scenes, and where each policy's files are."""

    task: str
    scenes: dict[str, PolicyScene]
    policy_dirs: dict[tuple[str, str], str]  # (mechanism, experience id) -> directory


def load_actor(directory: str, device: str = "cpu") -> tuple[RecipeActor, int]:
    """(actor, image size) of a frozen policy; its mechanism is checked first (a retired one is
    refused by name). Policies read both cameras and run on the CPU only."""
    policy_mechanism_of(directory)
    if device != "cpu":
        raise InvalidInput(f"{directory}: two-camera (mechanism 2) policies run on the CPU only, "
                           f"not on policy device {device!r}: set EXPAUDIT_POLICY_DEVICE=cpu")
    policy = RecipePolicy.load(Path(directory))
    return RecipeActor(policy), policy.spec.image_size


def make_camera(sim, task: str, size: int) -> DualCamera:
    """The camera a policy of image size `size` reads (see `load_actor`): agent and wrist views."""
    return DualCamera(sim, task=task, size=size)


def gl_renderer(camera) -> str:
    """"GL_RENDERER / GL_VERSION" of the OpenGL context a policy camera draws with, e.g.
    "llvmpipe (LLVM 15.0.6, 256 bits) / 4.5 (Compatibility Profile) Mesa 22.3.6"."""
    from OpenGL import GL

    if camera.renderer._gl_context is not None:
        camera.renderer._gl_context.make_current()
    names = [GL.glGetString(name) for name in (GL.GL_RENDERER, GL.GL_VERSION)]
    return " / ".join(n.decode(errors="replace") if n else "unknown" for n in names)


class PolicyExecutor:
    """Simulators, cameras and loaded policies of one process; runs groups of cells."""

    def __init__(self, world: PolicyWorld, *, device: str = "cpu", envs: int = 1) -> None:
        if envs < 1:
            raise ExecutorMisuse(f"envs must be at least 1, got {envs}")
        self.world = world
        self.device = device
        self.envs = envs
        self._envs: dict = {}  # image size -> (simulators, cameras)
        self._actors: dict = {}

    def use(self, world: PolicyWorld) -> None:
        """Run later cells against `world` (same task); simulators and loaded policies are kept."""
        if world.task != self.world.task:
            raise ExecutorMisuse(f"world task {world.task!r} differs from this executor's {self.world.task!r}")
        self.world = world

    def close(self) -> None:
        """Release the cameras' OpenGL contexts."""
        for _, cameras in self._envs.values():
            for camera in cameras:
                camera.close()
        self._envs.clear()

    def _environments(self, n: int, size: int) -> tuple[list, list]:
        """`n` simulators with cameras of image size `size`, made once."""
        sims, cameras = self._envs.setdefault(size, ([], []))
        while len(sims) < n:
            sim = StackSim() if self.world.task == "stack" else DoorSim()
            sims.append(sim)
            cameras.append(make_camera(sim, self.world.task, size))
        return sims[:n], cameras[:n]

    def actor(self, mechanism: str, experience_id: str):
        return self._loaded(mechanism, experience_id)[0]

    def _loaded(self, mechanism: str, experience_id: str):
        """(actor, image size, code version) of a policy, loaded once; the version is taken with
        the weights."""
        key = (mechanism, experience_id)
        if key not in self._actors:
            directory = self.world.policy_dirs.get(key)
            if directory is None:
                raise NotInWorld(f"no frozen {mechanism} policy for experience_id {experience_id!r}")
            version = policy_code_version(directory)
            self._actors[key] = (*load_actor(directory, self.device), version)
        return self._actors[key]

    def run(self, cells: list[Cell]) -> list[CellResult]:
        """Execute cells that all share (mechanism, experience), `envs` at a time."""
        if not cells:
            return []
        groups = {(c.mechanism, c.experience_id) for c in cells}
        if len(groups) != 1:
            raise ExecutorMisuse(f"PolicyExecutor.run takes cells of one (mechanism, experience), "
                                   f"got {sorted(groups)}")
        mechanism, eid = next(iter(groups))
        if mechanism not in POLICY_MECHANISM_NAMES:
            raise ExecutorMisuse(f"cell mechanism {mechanism!r} is not a policy mechanism "
                                   f"{POLICY_MECHANISM_NAMES}")
        actor, size, version = self._loaded(mechanism, eid)
        packages = None
        horizon = policy_rollout.HORIZON[self.world.task]  # read per call (tests shorten it)
        results = []
        for start in range(0, len(cells), self.envs):
            batch = cells[start:start + self.envs]
            scenes = []
            for cell in batch:
                scene = self.world.scenes.get(cell.state_id)
                if scene is None:
                    raise NotInWorld(f"scene {cell.state_id!r} is not in query set {cell.query_set!r}")
                scenes.append(scene)
            sims, cameras = self._environments(len(batch), size)
            if packages is None:
                packages = policy_package_versions(self.device, gl_renderer(cameras[0]))
            before = []
            for sim, scene in zip(sims, scenes):
                sim.restore(scene.layout)
                before.append(sim.state_hash())
            began = time.perf_counter()
            episodes = run_batch(
                sims, cameras, actor, [lambda s, L=sc.layout: s.restore(L) for sc in scenes],
                [sample_draw(sc.state_id, sc.draw) for sc in scenes],
                [noise_for(c.seed, eid, c.state_id, horizon) for c in batch], horizon)
            wall = (time.perf_counter() - began) / len(batch)
            for cell, sim, episode, state_hash in zip(batch, sims, episodes, before):
                results.append(CellResult(cell=cell, success=int(episode.success), state_hash=state_hash,
                                          final_hash=sim.state_hash(), wall_s=wall,
                                          code_version=version, packages=packages))
        return results


_WORKER: dict = {}


def _init_worker(world: PolicyWorld, device: str, envs: int) -> None:
    import torch

    torch.set_num_threads(1)
    _WORKER["executor"] = PolicyExecutor(world, device=device, envs=envs)


def _worker_run(cells: list[Cell]) -> list[CellResult]:
    return _WORKER["executor"].run(cells)


def chunk_cells(cells: Iterable[Cell], size: int = CHUNK_CELLS) -> list[list[Cell]]:
    """Cells split into units of one (mechanism, experience), in their given order."""
    chunks: list[list[Cell]] = []
    open_chunk: dict[tuple, list[Cell]] = {}
    for cell in cells:
        key = (cell.mechanism, cell.experience_id)
        current = open_chunk.get(key)
        if current is None or len(current) >= size:
            current = open_chunk[key] = []
            chunks.append(current)
        current.append(cell)
    return chunks


def execute_policy(cells: Iterable[Cell], world: PolicyWorld, journal_for: Callable[[Cell], Path], *,
                   workers: int = 2, device: str = "cpu", envs: int = 1,
                   done_keys: set | None = None) -> Iterator[CellResult]:
    """Run the policy cells not yet done, appending each to its journal; yields results as they land."""
    cells = list(cells)
    skip = set(done_keys or ())
    for path in {journal_for(c) for c in cells}:
        skip.update(journal_keys(path))
    todo = [c for c in cells if c.key not in skip]
    if not todo:
        return
    chunks = chunk_cells(todo)
    try:
        if workers <= 1:
            _init_worker(world, device, envs)
            results = map(_worker_run, chunks)
        else:
            ctx = mp.get_context("spawn")
            pool = ctx.Pool(workers, initializer=_init_worker, initargs=(world, device, envs))
            results = pool.imap_unordered(_worker_run, chunks, chunksize=1)
        yield from journaled((r for chunk_results in results for r in chunk_results), journal_for)
        if workers > 1:
            pool.close()
            pool.join()
    finally:
        if workers > 1 and "pool" in locals():
            pool.terminate()
        if workers <= 1 and "executor" in _WORKER:  # in-process: free its GL contexts while valid
            _WORKER.pop("executor").close()
