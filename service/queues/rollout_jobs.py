"""Missing matrix cells: planned in chunks, run by runners on the `rollouts` queue.

When an audit needs cells that are not stored, the audit job plans them in chunks (one
experience x `ROLLOUT_CHUNK_STATES` units x all seeds) whose RQ job id is a hash of its
cells, so submissions share them; enqueues those with missing cells under one Redis lock
per query set, re-running a chunk whose cells are still missing at most
`ROLLOUT_MAX_RUNS` times; then writes the progress on the submission and ends, leaving a
continuation that RQ enqueues when the next pending chunk ends (`depends_on`,
`allow_failure`), so no worker is held while the runners work. The runner side is
`service.runner.rollout_runner`. The steps: docs/runners.md ("What happens to a
submission").
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass

import numpy as np
import redis as redis_lib
from rq import Queue, Worker
from rq.exceptions import NoSuchJobError
from rq.job import Dependency, Job, JobStatus

from benchmark_data.registry import Mechanism, UnknownMechanism
from expaudit.errors import InternalError
from leaderboard.matrix import MISSING, TransferData
from service.process import defaults

log = logging.getLogger(__name__)

ROLLOUT_FUNCTION = "service.runner.rollout_runner.rollout_chunk_job"
"""Dotted path of the runner's job (the service never imports the simulator)."""
ROLLOUT_CHUNK_STATES = defaults.ROLLOUT_CHUNK_STATES
ROLLOUT_MAX_RUNS = defaults.ROLLOUT_MAX_RUNS
WAITING_KEY = "expaudit:waiting:{sid}"
"""Set while a submission waits for rollouts: the id of its continuation job."""


class RolloutsStuck(InternalError, RuntimeError):
    """A chunk ran `ROLLOUT_MAX_RUNS` times and its cells are still missing."""


@dataclass(frozen=True)
class Chunk:
    """Cells of one experience on a block of units, all seeds.

    `state_ids` holds the units the cells are keyed by (`Cell.state_id`):
    physical state ids for a camera-blind mechanism, scene ids for an image
    policy, which reads the render.
    """

    mechanism: str
    query_set: str
    experience_id: str
    state_ids: tuple[str, ...]
    seeds: tuple[int, ...]

    @property
    def job_id(self) -> str:
        text = json.dumps([self.mechanism, self.query_set, self.experience_id,
                           list(self.state_ids), list(self.seeds)])
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"rollout-{self.query_set}-{self.experience_id}-{digest}"

    @property
    def n_cells(self) -> int:
        return len(self.state_ids) * len(self.seeds)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["state_ids"], out["seeds"] = list(self.state_ids), list(self.seeds)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Chunk":
        return cls(mechanism=str(data["mechanism"]), query_set=str(data["query_set"]),
                   experience_id=str(data["experience_id"]),
                   state_ids=tuple(str(s) for s in data["state_ids"]),
                   seeds=tuple(int(s) for s in data["seeds"]))


@dataclass(frozen=True)
class RolloutPlan:
    """A setting's cells (per physical state or per scene) and the chunks that still miss some."""

    done: int
    total: int
    pending: tuple[Chunk, ...]

    @property
    def complete(self) -> bool:
        return self.done == self.total


def camera_blind(mechanism: str) -> bool:
    """True when a mechanism's cells are keyed by physical state, False when by scene."""
    try:
        return Mechanism(mechanism).camera_blind
    except ValueError:
        raise UnknownMechanism(f"mechanism {mechanism!r} is not one of "
                               f"{[m.value for m in Mechanism]}") from None


def _units(data: TransferData, mechanism: str) -> tuple[list[str], np.ndarray]:
    """The ids cells are keyed by, in first-seen order, and for each the tensor column it fills.

    Camera-blind: physical states, each with the column of its first scene
    (its one cell labels every render of the state). Otherwise: every scene.
    """
    if not camera_blind(mechanism):
        scenes = [str(s) for s in data.scenes.scene_ids]
        return scenes, np.arange(len(scenes), dtype=np.int64)
    states = [str(s) for s in np.asarray(data.scenes.state_ids)]
    first: dict[str, int] = {}
    for column, state in enumerate(states):
        first.setdefault(state, column)
    return list(first), np.array(list(first.values()), dtype=np.int64)


def plan_rollouts(data: TransferData, mechanism: str, query_set: str,
                  chunk_states: int = ROLLOUT_CHUNK_STATES) -> RolloutPlan:
    """Done/total cells (one per experience, unit and seed) and the pending chunks.

    Camera-blind mechanisms store one cell per physical state, which labels
    every render of it, so a state is done when its first scene is; an image
    policy stores one cell per scene. Either way a chunk is one experience,
    `chunk_states` consecutive units and all seeds.
    """
    units, columns = _units(data, mechanism)
    missing = data.outcomes[:, columns, :] == MISSING  # (K, n_units, S)
    seeds = tuple(range(data.outcomes.shape[2]))
    pending = []
    for i, experience_id in enumerate(data.experience_ids):
        for start in range(0, len(units), chunk_states):
            if missing[i, start:start + chunk_states].any():
                pending.append(Chunk(mechanism, query_set, experience_id,
                                     tuple(units[start:start + chunk_states]), seeds))
    total = int(missing.size)
    return RolloutPlan(done=total - int(missing.sum()), total=total, pending=tuple(pending))


_ACTIVE = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


def _runs_key(job_id: str) -> str:
    return f"expaudit:rollout-runs:{job_id}"


def _unit_name(mechanism: str) -> str:
    return "states" if camera_blind(mechanism) else "scenes"


def _enqueue_chunk(queue: Queue, chunk: Chunk) -> Job:
    return queue.enqueue(ROLLOUT_FUNCTION, chunk.to_dict(), job_id=chunk.job_id,
                         job_timeout=defaults.ROLLOUT_JOB_TIMEOUT_S,
                         result_ttl=defaults.RESULT_TTL_S, failure_ttl=defaults.FAILURE_TTL_S,
                         description=f"rollouts {chunk.mechanism} {chunk.experience_id} x "
                                     f"{len(chunk.state_ids)} {_unit_name(chunk.mechanism)} of "
                                     f"{chunk.query_set}")


def ensure_chunks(redis: redis_lib.Redis, chunks: tuple[Chunk, ...]) -> list[Job]:
    """The RQ jobs of `chunks`, enqueuing those not queued or running (deduplicated by id).

    Raises `RolloutsStuck` for a chunk that already ran `ROLLOUT_MAX_RUNS` times.
    """
    if not chunks:
        return []
    queue = Queue(defaults.ROLLOUT_QUEUE, connection=redis)
    jobs = []
    with redis.lock(f"expaudit:lock:rollouts:{chunks[0].query_set}", timeout=60,
                    blocking_timeout=60):
        for chunk in chunks:
            try:
                job = Job.fetch(chunk.job_id, connection=redis)
                status = job.get_status(refresh=False)
            except NoSuchJobError:
                job, status = None, None
            if status in _ACTIVE:
                jobs.append(job)
                continue
            runs = int(redis.incr(_runs_key(chunk.job_id)))
            redis.expire(_runs_key(chunk.job_id), defaults.FAILURE_TTL_S)
            if runs > ROLLOUT_MAX_RUNS:
                raise RolloutsStuck(
                    f"rollout chunk {chunk.job_id} ran {runs - 1} times and its cells are still "
                    f"missing (last state: {status.value if status else 'expired'}); check that the "
                    "runners and the workers share one object store (EXPAUDIT_STORE, "
                    "EXPAUDIT_S3_ENDPOINT) and the same frozen data")
            jobs.append(_enqueue_chunk(queue, chunk))
    return jobs


def runner_count(redis: redis_lib.Redis) -> int:
    """Runner processes listening on the rollouts queue now (0: nothing will run the chunks)."""
    return Worker.count(queue=Queue(defaults.ROLLOUT_QUEUE, connection=redis))


def wait_for(redis: redis_lib.Redis, sid: str, job: Job, audit_function, *, queue: str) -> Job:
    """Enqueue a continuation of submission `sid`'s audit that runs once `job` has ended.

    `queue` is the submission's audit queue (`service.queues.jobs.queue_for`), so a
    container submission's continuation reaches a process with a sandbox again.
    """
    n = int(redis.incr(f"expaudit:waits:{sid}"))
    redis.expire(f"expaudit:waits:{sid}", defaults.FAILURE_TTL_S)
    continuation = Queue(queue, connection=redis).enqueue(
        audit_function, sid, job_id=f"audit-{sid}-w{n}",
        depends_on=Dependency(jobs=[job], allow_failure=True),
        job_timeout=defaults.JOB_TIMEOUT_S, result_ttl=defaults.RESULT_TTL_S,
        failure_ttl=defaults.FAILURE_TTL_S, description=f"audit {sid} after {job.id}")
    redis.set(WAITING_KEY.format(sid=sid), continuation.id,
              ex=defaults.ROLLOUT_JOB_TIMEOUT_S + 120)
    return continuation


def waiting_job(redis: redis_lib.Redis, sid: str) -> str | None:
    """The continuation job a waiting submission left behind, if it is still pending."""
    job_id = redis.get(WAITING_KEY.format(sid=sid))
    if job_id is None:
        return None
    try:
        job = Job.fetch(job_id.decode(), connection=redis)
    except NoSuchJobError:
        return None
    return job.id if job.get_status(refresh=False) in _ACTIVE else None


def stop_waiting(redis: redis_lib.Redis, sid: str) -> None:
    redis.delete(WAITING_KEY.format(sid=sid))
