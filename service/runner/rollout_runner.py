"""The runner: an RQ worker on the `rollouts` and `selectors` queues.

On `selectors` it runs the audit jobs of container submissions
(`service.queues.jobs.audit_job`); in a deployment only the runner holds the Docker
socket. On `rollouts` it executes a chunk planned by `service.queues.rollout_jobs`,
skipping cells already stored (so chunks resume), with the mechanism's executor (Replay:
`simulator.executor.run_cell` on a `StackSim`; image policies: a
`simulator.policy_executor.PolicyExecutor` per task, on the device it was started with),
and stores each finished batch of cells with their provenance as a content-addressed chunk
in the object store (`service.store.computed_cells`), which runners on other hosts and the
workers share. The frozen root and the legacy computed-cells directory
(`EXPAUDIT_CELLS_DIR`) are only read. It does not fork per job (`SimpleWorker`): simulators and
policies are kept for the process's life. Nothing connects at import (`run_runner` gets
its connection and directories passed in), and `expaudit runner` loads this module (and
MuJoCo) only when it runs.
Details: docs/runners.md.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis as redis_lib
from rq import Queue, SimpleWorker

from benchmark_data.cells import load_cells
from benchmark_data.generation.library_stream import replay_sources
from benchmark_data.generation.rollouts import NotGeneratedHereError, build_policy_world
from benchmark_data.library import read_experiences
from benchmark_data.paths import computed_journal
from benchmark_data.policy_files import policy_dir
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import LIBRARY_IDS, QUERY_SETS, Mechanism
from expaudit.errors import InternalError
from expaudit.journal import append_record
from simulator.executor import Cell, ReplayWorld, run_cell
from simulator.policy_executor import POLICY_MECHANISM_NAMES, PolicyExecutor, PolicyWorld
from simulator.stack_scenes import StackLayout
from simulator.stack_sim import StackSim
from service.process import RUNNER_QUEUES, TRANSIENT_REDIS_ERRORS
from service.process import defaults
from service.store import StoreCells
from service.queues import (ROLLOUT_FUNCTION, Chunk, ContextNotInstalled, StopsCleanly, camera_blind,
                            install_context, work_until_stopped)

log = logging.getLogger(__name__)


class ChunkError(InternalError, ValueError):
    """A chunk names cells this runner cannot execute (unknown mechanism, query set,
    experience, state or scene, or a policy that is not trained).

    Chunks are planned by the service from a setting's declared cells, never written by
    a submitter, so a chunk that does not fit the runner's frozen root is the service's
    (or the deployment's) fault: reported, not charged to whoever submitted."""


@dataclass
class RunnerContext:
    """What the jobs of one runner process share: the frozen root (read), the computed cells
    (`computed`, the store's, written; without it the journal of `cells_dir` is appended to,
    as a single-host run without a store may), the Replay simulator and one policy runner
    per task, built on first use.

    `policy_device` (`cpu`, `cuda`, `cuda:N`) runs the policies' forward passes;
    `policy_envs` environments are stepped in lockstep, one batched forward
    pass per control step (1 on a CPU: bit-reproducible cells).
    """

    root: Path
    cells_dir: Path
    policy_device: str = "cpu"
    policy_envs: int = 1
    computed: StoreCells | None = None
    _sim: object | None = field(default=None, repr=False)
    _policy_executors: dict = field(default_factory=dict, repr=False)

    def sim(self):
        if self._sim is None:
            self._sim = StackSim()
        return self._sim

    def policy_executor(self, world):
        """The task's `PolicyExecutor`, set to run the cells of `world` (a `PolicyWorld`).

        Simulators, cameras and loaded policies are kept across chunks; only
        the scenes and policy directories change with the chunk.
        """
        executor = self._policy_executors.get(world.task)
        if executor is None:
            import torch  # deferred: heavy optional dependency

            torch.set_num_threads(1)  # as the generation pipeline's workers: same bits per cell
            executor = PolicyExecutor(world, device=self.policy_device, envs=self.policy_envs)
            self._policy_executors[world.task] = executor
        executor.use(world)
        return executor


_context: RunnerContext | None = None


def install_runner(context: RunnerContext | None) -> None:
    """Give this process's rollout jobs their frozen root (called once by `run_runner`)."""
    global _context
    _context = context


def _current() -> RunnerContext:
    if _context is None:
        raise ContextNotInstalled("no runner context installed: start runners with `expaudit runner`")
    return _context


def parse_chunk(data: dict) -> Chunk:
    """The chunk of a rollout job's argument; names a missing field."""
    try:
        return Chunk.from_dict(data)
    except KeyError as exc:
        raise ChunkError(f"rollout chunk: field {exc.args[0]!r} is missing") from None


def chunk_cells(chunk: Chunk) -> list:
    return [Cell(chunk.mechanism, chunk.query_set, chunk.experience_id, state, seed)
            for state in chunk.state_ids for seed in chunk.seeds]


def _check_mechanism(chunk: Chunk) -> str:
    """The chunk's task; names an unknown mechanism or query set."""
    if chunk.mechanism not in {m.value for m in Mechanism}:
        raise ChunkError(f"rollout chunk: mechanism {chunk.mechanism!r} is not one of "
                         f"{[m.value for m in Mechanism]}")
    if chunk.query_set not in QUERY_SETS:
        raise ChunkError(f"rollout chunk: query_set {chunk.query_set!r} is not one of "
                         f"{sorted(QUERY_SETS)}")
    return QUERY_SETS[chunk.query_set]


def _check_experience(task: str, chunk: Chunk, root: Path) -> None:
    if chunk.experience_id not in set(read_experiences(LIBRARY_IDS[task], root)["experience_id"]):
        raise ChunkError(f"rollout chunk: experience_id {chunk.experience_id!r} is not in the "
                         f"library under {root}")


def chunk_world(root: Path, chunk: Chunk):
    """The `ReplayWorld` of one chunk: its experience's recorded path and its states' layouts."""
    if chunk.mechanism != "replay" or QUERY_SETS.get(chunk.query_set) != "stack":
        raise ChunkError(f"rollout chunk: mechanism {chunk.mechanism!r} on query set "
                         f"{chunk.query_set!r} is not a Stack Replay cell this runner executes")
    sources = replay_sources(LIBRARY_IDS["stack"], root)
    if chunk.experience_id not in sources:
        raise ChunkError(f"rollout chunk: experience_id {chunk.experience_id!r} is not in the "
                         f"library under {root}")
    scenes = read_scenes(chunk.query_set, root)
    layouts = {}
    for row in scenes.drop_duplicates("state_id").itertuples(index=False):
        if row.state_id in chunk.state_ids:
            layouts[row.state_id] = StackLayout.from_dict(json.loads(row.layout))
    absent = [s for s in chunk.state_ids if s not in layouts]
    if absent:
        raise ChunkError(f"rollout chunk: state_id {absent[0]!r} is not in query set "
                         f"{chunk.query_set!r} under {root}")
    return ReplayWorld(experiences={chunk.experience_id: sources[chunk.experience_id]},
                       states=layouts)


def chunk_policy_world(root: Path, chunk: Chunk):
    """The `PolicyWorld` of one policy chunk: its scenes and its experience's frozen policy.

    Names the field of an unknown experience or scene, and a policy that is
    not trained under `root`.
    """
    task = _check_mechanism(chunk)
    if chunk.mechanism not in POLICY_MECHANISM_NAMES:
        raise ChunkError(f"rollout chunk: mechanism {chunk.mechanism!r} is not an image policy "
                         f"{POLICY_MECHANISM_NAMES}")
    _check_experience(task, chunk, root)
    try:
        world = build_policy_world(chunk_cells(chunk), root)
    except NotGeneratedHereError:
        raise ChunkError(f"rollout chunk: no trained {chunk.mechanism} policy for experience_id "
                         f"{chunk.experience_id!r} (expected in "
                         f"{policy_dir(chunk.mechanism, chunk.experience_id, root)})") from None
    absent = [s for s in chunk.state_ids if s not in world.scenes]
    if absent:
        raise ChunkError(f"rollout chunk: scene_id {absent[0]!r} is not in query set "
                         f"{chunk.query_set!r} under {root}")
    key = (chunk.mechanism, chunk.experience_id)
    return PolicyWorld(task=world.task,
                       scenes={s: world.scenes[s] for s in chunk.state_ids},
                       policy_dirs={key: world.policy_dirs[key]})


def stored_keys(root: Path, mechanism: str, query_set: str,
                cells_dir: Path | None = None, computed: StoreCells | None = None) -> set[tuple]:
    """Keys of the cells already stored for (mechanism, query set): the frozen root's table and
    journal, the journal of the computed-cells directory `cells_dir`, and the store's computed
    cells `computed`."""
    frame = load_cells(mechanism, query_set, root, (cells_dir, computed))
    return set(zip(frame.mechanism, frame.query_set, frame.experience_id, frame.state_id,
                   frame.seed.astype(int)))


def chunk_executor(context: RunnerContext, chunk: Chunk):
    """(execute, batch): a function from a batch of the chunk's cells to their results, and
    how many cells it takes at once (the policy executor steps `policy_envs` in lockstep)."""
    _check_mechanism(chunk)
    if chunk.mechanism in POLICY_MECHANISM_NAMES:
        executor = context.policy_executor(chunk_policy_world(context.root, chunk))
        return executor.run, context.policy_envs
    world = chunk_world(context.root, chunk)
    return (lambda cells: [run_cell(context.sim(), world, cell) for cell in cells]), 1


def run_chunk(context: RunnerContext, chunk: Chunk, beat=None) -> tuple[int, int]:
    """Execute the chunk's cells not stored yet; returns (run, already stored).

    Each batch's results are stored as soon as it ends (one chunk object in the store, or
    lines of the journal), so a chunk cut short loses only the batch in flight; `beat` (if
    given) is called after each batch: the runner is alive.
    """
    execute, batch = chunk_executor(context, chunk)
    done = stored_keys(context.root, chunk.mechanism, chunk.query_set, context.cells_dir,
                       context.computed)
    cells = chunk_cells(chunk)
    todo = [c for c in cells if c.key not in done]
    journal = computed_journal(chunk.mechanism, chunk.query_set, context.cells_dir)
    for start in range(0, len(todo), batch):
        records = [result.to_record() for result in execute(todo[start:start + batch])]
        if context.computed is not None:
            context.computed.put_chunk(chunk.mechanism, chunk.query_set, records)
        else:
            for record in records:
                append_record(journal, record)
        if beat is not None:
            beat()
    return len(todo), len(cells) - len(todo)


def rollout_chunk_job(chunk: dict) -> str:
    """RQ entry point (`service.queues.rollout_jobs.ROLLOUT_FUNCTION`): run one chunk."""
    spec = parse_chunk(chunk)
    started = time.monotonic()
    ran, skipped = run_chunk(_current(), spec, _heartbeat)
    units = "states" if camera_blind(spec.mechanism) else "scenes"
    return (f"{spec.mechanism} {spec.experience_id} on {len(spec.state_ids)} {units} of "
            f"{spec.query_set}: {ran} cells run, {skipped} already stored, "
            f"{time.monotonic() - started:.1f} s")


_heartbeat = None
"""While a rollout job runs: beats for it (`RunnerWorker.execute_job`)."""


class RunnerWorker(StopsCleanly, SimpleWorker):
    """A non-forking RQ worker that stops cleanly (`service.queues.worker_loop`).

    A rollout job beats after every batch, so its chunk is seen abandoned `heartbeat_ttl_s`
    after its runner died (RQ's own SimpleWorker waits for the job's 30-minute timeout);
    other jobs (selector audits, which do not beat) keep RQ's timeout-long heartbeat.
    """

    heartbeat_ttl_s: int = defaults.RUNNER_HEARTBEAT_TTL_S

    def get_heartbeat_ttl(self, job, working_time: float = 0.0) -> int:
        if job.func_name == ROLLOUT_FUNCTION:
            return self.heartbeat_ttl_s
        return super().get_heartbeat_ttl(job, working_time)

    def execute_job(self, job, queue):
        global _heartbeat
        _heartbeat = lambda: self.maintain_heartbeats(job, self.execution)  # noqa: E731
        try:
            return super().execute_job(job, queue)
        finally:
            _heartbeat = None


def run_runner(redis: redis_lib.Redis, root: Path, jobs_context, *, cells_dir: Path,
               burst: bool = False, policy_device: str = "cpu", policy_envs: int = 1,
               heartbeat_ttl_s: int = defaults.RUNNER_HEARTBEAT_TTL_S) -> None:
    """Serve `selectors` and `rollouts` until a shutdown signal (or, with `burst`, until both
    are empty).

    Cells are read from the frozen `root`, the legacy directory `cells_dir`
    (`service.process.config.computed_cells_dir`) and the store of `jobs_context`, and
    stored in that store (`service.store.computed_cells`: what web and workers read).

    `jobs_context` is the `service.queues.jobs.JobContext` (store, catalog, sandbox) the
    selector audits run with, built like a worker's (`service.queues.worker.build_context`).
    `policy_device` and `policy_envs` are how image-policy cells run (`RunnerContext`);
    `heartbeat_ttl_s` how soon a rollout chunk of a dead runner is abandoned (`RunnerWorker`).
    """
    install_runner(RunnerContext(Path(root), Path(cells_dir), policy_device=policy_device,
                                 policy_envs=policy_envs,
                                 computed=StoreCells(jobs_context.store)))
    install_context(jobs_context)

    def work_once() -> None:
        # Maintenance (which fails the chunks of dead runners) at least every heartbeat
        # period: between jobs, and while idle (the dequeue wait is the worker TTL - 15 s).
        worker = RunnerWorker([Queue(name, connection=redis) for name in RUNNER_QUEUES],
                              connection=redis, worker_ttl=heartbeat_ttl_s + 15,
                              maintenance_interval=heartbeat_ttl_s)
        worker.heartbeat_ttl_s = heartbeat_ttl_s
        worker.work(burst=burst, logging_level="INFO")

    work_until_stopped(RunnerWorker, work_once, burst=burst, role="runner",
                       retry_on=TRANSIENT_REDIS_ERRORS)
