"""Jobs on RQ: the audit of a submission and the leaderboard rebuild.

Each job has one boundary (`_run_boundary`) that maps any exception to a submission
state: a submitter error fails it at once with fault "submitter"; anything else is
retried (`defaults.JOB_RETRY_INTERVALS_S`) and then fails with fault "infrastructure",
or, if even that cannot be written, stays open for the reconciler. A container
submission's audit runs on the `selectors` queue (`queue_for`, `service.selectors.run`)
and runs its selector before anything else, before any missing cell is planned (a
selector that fails costs no rollout); missing cells are left to the runners
(`service.queues.rollout_jobs`). Workers get their connections (and the sandbox) once,
through `install_context`; importing this module connects to nothing.
Details: docs/service.md ("Jobs and failures"), docs/runners.md.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import redis as redis_lib
from rq import Queue, Retry, get_current_job
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from expaudit.errors import InternalError
from leaderboard.audit import run_audit
from leaderboard.errors import InputError
from leaderboard.scores import (FieldError, StoredScoresDamaged, decode_scores, encode_scores,
                                read_frame, validate_upload)
from leaderboard.site.html_report import render_report_html
from service.process import defaults, tolerated
from service.queues import rollout_jobs
from service.auth import ActiveSubmissions
from service.catalog import Catalog, SelectorsUnsupported, UnknownSetting
from service.selectors import SelectorFailed, run_container
from service.submissions import (AuditOptions, DIRTY_KEY, READOUT_KINDS, Fault, State, Status, SubmissionRepo,
                                 catalog_limits, rebuild_leaderboard, submission_context)
from service.sealed import audit_sealed, give_back_claim_key
from service.store import ObjectNotFound, ObjectStore, StoreError

log = logging.getLogger(__name__)


class NotRetryable(InternalError):
    """An infrastructure-side failure that a retry cannot fix (e.g. an incomplete matrix)."""


class ContextNotInstalled(InternalError, RuntimeError):
    """A job ran in a process that was not started as a worker or runner (no context)."""


SUBMITTER_ERRORS = (InputError, FieldError, UnknownSetting, SelectorFailed, SelectorsUnsupported)
"""Exceptions that are the submitter's fault: reported, never retried."""

NOT_RETRYABLE = (NotRetryable, StoredScoresDamaged, rollout_jobs.RolloutsStuck)
"""Infrastructure failures a retry cannot fix."""


@dataclass
class JobContext:
    """The connections and options every job of one worker process uses."""

    store: ObjectStore
    redis: redis_lib.Redis
    catalog: Catalog
    options: AuditOptions
    sandbox: object | None = None
    """The `SelectorSandbox` container submissions run in (None: they cannot run here)."""
    selector_limits: object | None = None
    """The `sandbox.base.Limits` of a selector run (None: the sandbox defaults)."""

    @property
    def repo(self) -> SubmissionRepo:
        return SubmissionRepo(self.store)


_context: JobContext | None = None


def install_context(context: JobContext | None) -> None:
    """Give this process's jobs their connections (called once by the worker)."""
    global _context
    _context = context


def current_context() -> JobContext:
    if _context is None:
        raise ContextNotInstalled("no job context installed: start workers with `expaudit worker`")
    return _context


# ------------------------------------------------------------------ enqueueing

def _retry() -> Retry:
    intervals = list(defaults.JOB_RETRY_INTERVALS_S)
    return Retry(max=len(intervals), interval=intervals)


def queue_for(*, container: bool) -> str:
    """The queue of a submission's audit jobs: the one place that routes them.

    A container submission's audit runs its selector, so it goes to
    `SELECTOR_QUEUE`, served by the processes that hold a sandbox (the runner;
    the embedded worker); a scores file's audit stays on `AUDIT_QUEUE`.
    """
    return defaults.SELECTOR_QUEUE if container else defaults.AUDIT_QUEUE


def enqueue_audit(redis: redis_lib.Redis, sid: str, *, container: bool) -> Job:
    """Enqueue the audit of submission `sid` on its queue (`queue_for`)."""
    return Queue(queue_for(container=container), connection=redis).enqueue(
        audit_job, sid, job_id=f"audit-{sid}", retry=_retry(), job_timeout=defaults.JOB_TIMEOUT_S,
        result_ttl=defaults.RESULT_TTL_S, failure_ttl=defaults.FAILURE_TTL_S,
        description=f"audit {sid}")


READOUT_AUDIT_JOB = "service.queues.readout_jobs.readout_audit_job"
"""The readout audit job, named (its module imports this one)."""


def enqueue_audit_of(redis: redis_lib.Redis, sid: str, kind: str, *, program: bool = False) -> Job:
    """Enqueue the audit of submission `sid` by its manifest's kind (and, for a readout
    setting, whether a program of its makes the features: `program`, the manifest has a
    selector backend, which needs the sandbox's queue): the one place that routes audits,
    used by the submission route and the reconciler alike."""
    if kind in READOUT_KINDS:
        return Queue(queue_for(container=program), connection=redis).enqueue(
            READOUT_AUDIT_JOB, sid, job_id=f"audit-{sid}", retry=_retry(),
            job_timeout=defaults.JOB_TIMEOUT_S, result_ttl=defaults.RESULT_TTL_S,
            failure_ttl=defaults.FAILURE_TTL_S, description=f"readout audit {sid}")
    return enqueue_audit(redis, sid, container=kind == "container")


def enqueue_publish(redis: redis_lib.Redis, sid: str | None = None) -> Job:
    job_id = f"publish-{sid}" if sid else None
    return Queue(defaults.PUBLISH_QUEUE, connection=redis).enqueue(
        publish_job, sid, job_id=job_id, retry=_retry(), job_timeout=defaults.JOB_TIMEOUT_S,
        result_ttl=defaults.RESULT_TTL_S, failure_ttl=defaults.FAILURE_TTL_S,
        description=f"publish {sid or 'leaderboard'}")


# ----------------------------------------------------------------------- lease

class Lease:
    """A renewed Redis key marking that one execution is working on a submission.

    Stops two executions of the same submission running at once (a re-enqueued
    job beside a slow one), and lapses within `LEASE_TTL_S` when a worker dies,
    which is how the reconciler tells a dead execution from a live one.
    """

    def __init__(self, redis: redis_lib.Redis, sid: str, ttl_s: float = defaults.LEASE_TTL_S) -> None:
        self.redis = redis
        self.key = f"expaudit:lease:{sid}"
        self.ttl_ms = int(ttl_s * 1000)
        self.token = f"{threading.get_ident()}-{id(self)}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.redis.set(self.key, self.token, nx=True, px=self.ttl_ms):
            return False
        self._thread = threading.Thread(target=self._renew, daemon=True, name=self.key)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_ms / 3000):
            with tolerated(log, "lease %s not renewed: %s", self.key):
                self.redis.pexpire(self.key, self.ttl_ms)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with tolerated(log, "lease %s not released (it lapses on its own): %s", self.key):
            if self.redis.get(self.key) == self.token.encode():
                self.redis.delete(self.key)

    @staticmethod
    def held(redis: redis_lib.Redis, sid: str) -> bool:
        return bool(redis.exists(f"expaudit:lease:{sid}"))


# -------------------------------------------------------------------- boundary

def _finish(ctx: JobContext, sid: str, status: Status) -> None:
    ctx.repo.write_status(sid, status)
    if status.state.is_final:
        with tolerated(log, "active set of %s not updated: %s", sid):
            ActiveSubmissions(ctx.redis).remove(ctx.repo.manifest(sid).owner, sid)


def _run_boundary(kind: str, sid: str, body) -> str:
    """Run `body(ctx, sid, status)` for one submission and map every outcome to a state."""
    ctx = current_context()
    job = get_current_job()
    lease = Lease(ctx.redis, sid)
    if not lease.acquire():
        return f"{kind} {sid}: skipped, another execution holds the lease"
    status: Status | None = None
    try:
        status = ctx.repo.status(sid)
        if status.state.is_final:
            return f"{kind} {sid}: already {status.state.value}"
        return body(ctx, sid, status)
    except SUBMITTER_ERRORS as exc:
        log.info("%s %s failed (submitter): %s", kind, sid, exc)
        _finish(ctx, sid, _base(_latest(ctx, sid, status)).advance(
            state=State.FAILED, reason=str(exc), fault=Fault.SUBMITTER))
        return f"{kind} {sid}: failed (submitter)"
    except Exception as exc:  # the job boundary: record every other failure, then retry or fail
        reason = f"{kind} failed: {type(exc).__name__}: {exc}"
        retries_left = 0 if isinstance(exc, NOT_RETRYABLE) or job is None else (job.retries_left or 0)
        if retries_left > 0:
            log.warning("%s %s: %s; %d retries left", kind, sid, reason, retries_left)
            _note_retry(ctx, sid, _latest(ctx, sid, status), reason)
            raise
        log.exception("%s %s failed for good", kind, sid)
        _finish(ctx, sid, _base(_latest(ctx, sid, status)).advance(
            state=State.FAILED, reason=reason, fault=Fault.INFRASTRUCTURE))
        return f"{kind} {sid}: failed (infrastructure)"
    finally:
        lease.release()


def _base(status: Status | None) -> Status:
    return status if status is not None else Status(state=State.QUEUED)


def _latest(ctx: JobContext, sid: str, status: Status | None) -> Status | None:
    """The status as the failed execution last wrote it (its attempt counted, its reports
    and progress), read again from the store; `status` (read before the run) if that
    fails. A failure recorded from the status read before the run would undo the body's
    writes: every failed submission showed `attempts: 0`."""
    if status is None:
        return None
    try:
        return ctx.repo.status(sid)
    except (StoreError, OSError, ValueError, KeyError) as exc:
        log.warning("status of %s not read again after a failure: %s", sid, type(exc).__name__)
        return status


def _note_retry(ctx: JobContext, sid: str, status: Status | None, reason: str) -> None:
    """Show the retried problem in the status; best effort (the store may be the problem)."""
    if status is None:
        return
    try:
        ctx.repo.write_status(sid, status.advance(reason=f"retrying: {reason}"))
    except (StoreError, OSError) as exc:
        log.warning("status of %s not updated before retry: %s", sid, type(exc).__name__)


# ------------------------------------------------------------------------ jobs

def _audit(ctx: JobContext, sid: str, status: Status) -> str:
    repo = ctx.repo
    manifest = repo.manifest(sid)
    resumed = status.state is State.RUNNING and status.rollouts is not None
    status = status.advance(state=State.RUNNING, progress=max(status.progress, 0.05),
                            attempts=status.attempts + (0 if resumed else 1), reason=None, fault=None)
    repo.write_status(sid, status)
    selected = _selector_first(ctx, sid, manifest)  # before any rollout is planned
    waiting, status = _await_rollouts(ctx, sid, manifest, status)
    if waiting is not None:
        return waiting
    validated, provenance = selected or _scores(ctx, sid, manifest)
    done = list(status.reports)
    for index, scores in enumerate(validated):
        if scores.setting_id in done:
            continue  # written by an earlier execution that died afterwards
        status = status.advance(state=State.SCORING, progress=0.1 + 0.8 * index / len(validated))
        repo.write_status(sid, status)
        data = ctx.catalog.load_transfer(scores.setting_id)
        if not data.is_complete:
            raise NotRetryable(f"setting '{scores.setting_id}' has {data.n_missing} outcome cells "
                               "not executed yet; the audit needs a complete matrix")
        if ctx.catalog.get_setting(scores.setting_id).sealed:
            report = audit_sealed(ctx.store, ctx.redis, manifest.sealed_owner, scores.setting_id, sid,
                                  data, scores.scores)  # headline numbers only (docs/sealed.md)
        else:
            report = run_audit(data, scores.scores, selection_only=scores.selection_only,
                               **ctx.options.kwargs()).to_dict()
        if provenance is not None:
            report["selector"] = provenance
        repo.write_report(sid, scores.setting_id, report,
                          render_report_html(report, submission_context(manifest, scores.setting_id)))
        done.append(scores.setting_id)
        status = status.advance(reports=tuple(done))
    repo.write_status(sid, status.advance(state=State.SCORING, progress=0.9, reports=tuple(done)))
    enqueue_publish(ctx.redis, sid)
    return f"audit {sid}: {len(done)} report(s) written"


def _selector_first(ctx: JobContext, sid: str, manifest) -> tuple[list, dict] | None:
    """A container submission's validated scores and provenance; None for a scores upload.

    The selector runs once, before the audit plans any rollout (it never sees outcomes, so
    it needs none): one that fails ends the submission in seconds without a rollout. What it
    produced is kept with the submission, so the audit's continuation once the runners
    filled the matrix (or a retry) reads it instead of running the selector again. A failed
    selector told nothing about the outcomes, so the sealed quota it was counted under is
    given back (docs/sealed.md, "The daily quota").
    """
    if manifest.kind != "container":
        return None
    stored = ctx.repo.selector_scores(sid)
    if stored is not None:
        return decode_scores(stored[0]), stored[1]
    try:
        outcome = run_container(ctx, sid, manifest)
    except SelectorFailed as exc:
        if manifest.sealed_claim is None:
            raise
        give_back_claim_key(ctx.redis, ctx.store, manifest.sealed_claim)
        raise SelectorFailed(f"{exc}; not counted against the day's sealed quota") from None
    ctx.repo.write_selector_scores(sid, encode_scores([outcome.scores]), outcome.provenance)
    return [outcome.scores], outcome.provenance


def _scores(ctx: JobContext, sid: str, manifest) -> tuple[list, None]:
    """The validated scores of each setting of a scores upload (no provenance)."""
    if manifest.scores_key is not None:  # validated by the web process: read, not parsed again
        return decode_scores(ctx.store.get_bytes(manifest.scores_key)), None
    raw = ctx.store.get_bytes(manifest.input_key)  # a manifest from before the validated table
    frame = read_frame(raw, manifest.input_format, manifest.filename, catalog_limits(ctx.catalog))
    return validate_upload(frame, list(manifest.settings), ctx.catalog, manifest.filename), None


def _await_rollouts(ctx: JobContext, sid: str, manifest,
                    status: Status) -> tuple[str | None, Status]:
    """Enqueue the rollouts the submission's settings still miss and leave a continuation.

    Returns (None, status) when every matrix is complete (the audit goes on),
    else (what the job did, status); the continuation runs once the next
    pending chunk has ended.
    """
    plans = []
    for setting_id in manifest.settings:
        if setting_id in status.reports:
            continue
        data = ctx.catalog.load_transfer(setting_id)
        if data.is_complete:
            continue
        if not ctx.catalog.fillable(setting_id):
            raise NotRetryable(f"setting '{setting_id}' has {data.n_missing} outcome cells not "
                               "executed yet and no runner can compute them")
        summary = ctx.catalog.get_setting(setting_id)
        plans.append(rollout_jobs.plan_rollouts(data, summary.mechanism, summary.query_set))
    if not plans:
        if status.rollouts is not None:
            _fold_computed(ctx, manifest.settings)
            rollout_jobs.stop_waiting(ctx.redis, sid)
            status = status.advance(rollouts={**status.rollouts, "done": status.rollouts["total"],
                                              "chunks_pending": 0, "runners": None})
            ctx.repo.write_status(sid, status)
        return None, status
    chunks = tuple(c for plan in plans for c in plan.pending)
    jobs = rollout_jobs.ensure_chunks(ctx.redis, chunks)
    progress = {"done": sum(p.done for p in plans), "total": sum(p.total for p in plans),
                "chunks_pending": len(chunks), "runners": rollout_jobs.runner_count(ctx.redis)}
    status = status.advance(rollouts=progress)
    ctx.repo.write_status(sid, status)
    rollout_jobs.wait_for(ctx.redis, sid, jobs[0], audit_job,
                          queue=queue_for(container=manifest.kind == "container"))
    return (f"audit {sid}: waiting for {len(chunks)} rollout chunk(s), "
            f"{progress['done']}/{progress['total']} cells done"), status


def _fold_computed(ctx: JobContext, settings) -> None:
    """Fold the chunks the runners stored for `settings` into one table each, once their
    matrices are complete (the store's computed cells have one merge owner: the worker
    holding the fold lock). A failed fold is logged: the chunks stay readable as they are."""
    for setting_id in settings:
        try:
            folded = ctx.catalog.fold_computed(setting_id, ctx.redis)
        except StoreError as exc:
            log.warning("computed cells of %s not folded: %s", setting_id, exc)
            continue
        if folded is not None and folded.chunks_folded:
            log.info("computed cells of %s: %d chunk(s) folded, %d cells in %s", setting_id,
                     folded.chunks_folded, folded.cells, folded.table)


def _publish(ctx: JobContext, sid: str, status: Status) -> str:
    manifest = ctx.repo.manifest(sid)
    missing = set(manifest.settings) - set(status.reports)
    if missing:
        raise NotRetryable(f"reports missing for {sorted(missing)}; the audit did not finish")
    _rebuild_locked(ctx, include=sid)
    _finish(ctx, sid, status.advance(state=State.PUBLISHED, progress=1.0, reason=None, fault=None))
    return f"publish {sid}: published"


def _rebuild_locked(ctx: JobContext, include: str | None = None) -> int:
    """One rebuild at a time: two interleaved rebuilds could publish a stale site last.

    The lock lives `LEASE_TTL_S` and is renewed while the rebuild runs (like a
    lease), so a worker killed mid-rebuild holds up the next one for seconds,
    not for a job's whole timeout."""
    lock = ctx.redis.lock("expaudit:lock:leaderboard", timeout=defaults.LEASE_TTL_S,
                          blocking_timeout=defaults.LEADERBOARD_LOCK_TIMEOUT_S,
                          thread_local=False)  # renewed from the keeper thread
    with lock:
        stop = threading.Event()
        keeper = threading.Thread(target=_keep_lock, args=(lock, stop), daemon=True,
                                  name="leaderboard-lock")
        keeper.start()
        try:
            return rebuild_leaderboard(ctx.store, ctx.catalog, ctx.options, include=include)
        finally:
            stop.set()
            keeper.join(timeout=2)


def _keep_lock(lock, stop: threading.Event) -> None:
    while not stop.wait(defaults.LEASE_TTL_S / 3):
        with tolerated(log, "leaderboard lock not renewed: %s"):
            lock.reacquire()


def audit_job(sid: str) -> str:
    """RQ entry point: audit submission `sid` and enqueue its publication."""
    return _run_boundary("audit", sid, _audit)


def publish_job(sid: str | None = None) -> str:
    """RQ entry point: rebuild the leaderboard (and mark `sid` published)."""
    if sid is None:
        return f"leaderboard rebuilt: {_rebuild_locked(current_context())} files"
    return _run_boundary("publish", sid, _publish)


# ------------------------------------------------------------------ reconciler

_PENDING = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


def _job_pending(redis: redis_lib.Redis, job_id: str, sid: str) -> bool:
    """True while a job for `sid` is waiting in Redis or a live execution holds its lease."""
    if Lease.held(redis, sid) or rollout_jobs.waiting_job(redis, sid) is not None:
        return True
    try:
        job = Job.fetch(job_id, connection=redis)
    except NoSuchJobError:
        return False
    return job.get_status(refresh=False) in _PENDING


@dataclass(frozen=True)
class ReconcileResult:
    """What one reconciler pass did."""

    open: int
    enqueued: tuple[str, ...]
    rebuild_enqueued: bool


def reconcile(store: ObjectStore, redis: redis_lib.Redis) -> ReconcileResult:
    """Re-enqueue every submission that is not final and has no pending job.

    Reads the store (the system of record), so it restores the queues after
    Redis lost them, and restarts submissions whose worker died.
    """
    repo = SubmissionRepo(store)
    active = ActiveSubmissions(redis)
    open_ids = repo.open_ids()
    enqueued = []
    for sid in open_ids:
        try:
            manifest = repo.manifest(sid)
        except ObjectNotFound:
            log.warning("open marker of %s has no manifest (creation never finished); removed", sid)
            store.delete(f"open/{sid}")
            continue
        try:
            status = repo.status(sid)
        except ObjectNotFound:
            status = Status(state=State.QUEUED)
            repo.write_status(sid, status)
        if status.state.is_final:
            repo.write_status(sid, status)  # clears the stale open marker
            continue
        active.add(manifest.owner, sid)
        audited = status.state is State.SCORING and set(status.reports) >= set(manifest.settings)
        job_id = f"{'publish' if audited else 'audit'}-{sid}"
        if _job_pending(redis, job_id, sid):
            continue
        if audited:
            enqueue_publish(redis, sid)
        else:
            enqueue_audit_of(redis, sid, manifest.kind, program=manifest.selector_backend is not None)
        enqueued.append(sid)
    rebuild = store.exists(DIRTY_KEY)
    if rebuild:
        enqueue_publish(redis, None)
    return ReconcileResult(open=len(open_ids), enqueued=tuple(enqueued), rebuild_enqueued=rebuild)
