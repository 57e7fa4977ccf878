"""Audit and publish jobs, the job boundary, leases and the reconciler, on a real Redis.

Jobs run in this process with rq's SimpleWorker in burst mode.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.registry import ScheduledJobRegistry

from service.process import defaults

from service.queues import jobs
from service.submissions.publishing import AuditOptions
from service.submissions.records import (Fault, Manifest, State, SubmissionRepo, new_submission_id,
                                         utc_now)
from service.queues.worker import queues
from tests.support.servers import run_jobs, scores_csv
from tests.support.submissions import stored_submission


def test_audit_then_publish(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")), public=True)
    jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    repo = SubmissionRepo(store)
    status = repo.status(sid)
    assert status.state is State.PUBLISHED and status.progress == 1.0 and status.attempts == 1
    assert status.reports == ("toy-k4",)
    report = repo.report(sid, "toy-k4")
    assert report["inputs"]["n_shuffles"] == 100 and report["inputs"]["n_bootstrap"] == 100
    assert repo.report_html(sid, "toy-k4").startswith(b"<!")
    board = json.loads(store.get_bytes("leaderboard/settings/toy-k4.json"))
    kinds = sorted(row["kind"] for row in board["rows"])
    assert kinds.count("submission") == 1 and kinds.count("baseline") == 5
    assert store.exists(f"leaderboard/reports/{sid}.toy-k4.html")
    assert repo.open_ids() == []


def test_submitter_error_fails_without_retry(store, redis_conn, catalog):
    body = scores_csv(catalog.load_transfer("toy-k4")).replace(b"toy-k4-e001", b"toy-k4-e777", 1)
    sid = stored_submission(store, body)
    job = jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.SUBMITTER
    assert "scores.csv line 3, field 'experience_id': value 'toy-k4-e777'" in status.reason
    job.refresh()
    assert job.get_status() == "finished"  # mapped to a state, not left to RQ's retry
    assert len(ScheduledJobRegistry(queue=Queue(defaults.AUDIT_QUEUE, connection=redis_conn))) == 0


def test_infrastructure_error_is_retried_with_backoff(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    store.delete(SubmissionRepo(store).manifest(sid).input_key)  # the input went missing
    job = jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert not status.state.is_final
    assert status.reason.startswith("retrying: audit failed: ObjectNotFound")
    job.refresh()
    assert job.retries_left == len(defaults.JOB_RETRY_INTERVALS_S) - 1
    registry = ScheduledJobRegistry(queue=Queue(defaults.AUDIT_QUEUE, connection=redis_conn))
    assert job.id in registry.get_job_ids()


def test_last_retry_fails_as_infrastructure(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    store.delete(SubmissionRepo(store).manifest(sid).input_key)
    job = jobs.enqueue_audit(redis_conn, sid, container=False)
    job.retries_left = 0
    job.save()
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.INFRASTRUCTURE
    assert "ObjectNotFound" in status.reason and "not found" in status.reason
    assert status.attempts == 1  # the failed execution counts (attempts was 0 once)


def test_incomplete_matrix_is_not_retried(store, redis_conn, catalog):
    body = scores_csv(catalog.load_transfer("toy-partial"))
    sid = stored_submission(store, body, settings=("toy-partial",))
    jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.INFRASTRUCTURE
    assert "9 outcome cells not executed yet" in status.reason


def test_a_held_lease_skips_a_second_execution(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    lease = jobs.Lease(redis_conn, sid)
    assert lease.acquire()
    try:
        job = jobs.enqueue_audit(redis_conn, sid, container=False)
        run_jobs(store, redis_conn, catalog)
        job.refresh()
        assert "skipped, another execution holds the lease" in job.return_value()
        assert SubmissionRepo(store).status(sid).state is State.QUEUED
    finally:
        lease.release()
    assert not jobs.Lease.held(redis_conn, sid)


def test_reconciler_restores_lost_queues_without_duplicates(store, redis_conn, catalog):
    sids = [stored_submission(store, scores_csv(catalog.load_transfer("toy-k4"), seed=s))
            for s in range(3)]
    first = jobs.reconcile(store, redis_conn)
    assert sorted(first.enqueued) == sorted(sids) and first.open == 3
    second = jobs.reconcile(store, redis_conn)
    assert second.enqueued == ()  # already queued: nothing enqueued twice
    assert Queue(defaults.AUDIT_QUEUE, connection=redis_conn).count == 3
    redis_conn.flushdb()  # Redis lost everything
    third = jobs.reconcile(store, redis_conn)
    assert sorted(third.enqueued) == sorted(sids)
    run_jobs(store, redis_conn, catalog)
    repo = SubmissionRepo(store)
    assert {repo.status(s).state for s in sids} == {State.PUBLISHED}
    assert jobs.reconcile(store, redis_conn).open == 0


def test_reconciler_resumes_at_publish_when_reports_exist(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    jobs.enqueue_audit(redis_conn, sid, container=False)
    jobs.install_context(jobs.JobContext(store, redis_conn, catalog, AuditOptions(100, 100)))
    try:
        SimpleWorker([Queue(defaults.AUDIT_QUEUE, connection=redis_conn)],
                     connection=redis_conn).work(burst=True, logging_level="WARNING")
    finally:
        jobs.install_context(None)
    assert SubmissionRepo(store).status(sid).state is State.SCORING
    redis_conn.flushdb()  # the publish job is lost with Redis
    result = jobs.reconcile(store, redis_conn)
    assert result.enqueued == (sid,)
    assert Job.fetch(f"publish-{sid}", connection=redis_conn).get_status() == "queued"
    run_jobs(store, redis_conn, catalog)
    assert SubmissionRepo(store).status(sid).state is State.PUBLISHED


def test_owner_publish_marks_a_rebuild_that_survives_redis_loss(store, redis_conn, catalog):
    from service.submissions.publishing import DIRTY_KEY

    store.put_bytes(DIRTY_KEY, b"")
    assert jobs.reconcile(store, redis_conn).rebuild_enqueued
    run_jobs(store, redis_conn, catalog)
    assert not store.exists(DIRTY_KEY)
    index = json.loads(store.get_bytes("leaderboard/index.json"))
    assert {s["setting_id"] for s in index["settings"]} == {"toy-k4", "toy-k3", "toy-sealed",
                                                            "toy-partial"}


def test_jobs_need_an_installed_context():
    jobs.install_context(None)
    with pytest.raises(RuntimeError, match="no job context installed"):
        jobs.current_context()


def test_worker_queue_order_puts_publish_first(redis_conn):
    assert [q.name for q in queues(redis_conn)] == [defaults.PUBLISH_QUEUE, defaults.AUDIT_QUEUE]
    told = queues(redis_conn, (defaults.SELECTOR_QUEUE, defaults.AUDIT_QUEUE,
                               defaults.PUBLISH_QUEUE))
    assert [q.name for q in told] == ["publish", "audit", "selectors"]


def _container_submission(store) -> str:
    """A container submission (a selector archive) as the web process records it."""
    body = b"not run here"
    sha = hashlib.sha256(body).hexdigest()
    store.put_if_absent(f"inputs/sha256/{sha}", body)
    sid = new_submission_id()
    SubmissionRepo(store).create(Manifest(
        submission_id=sid, owner="tok-test", owner_name="test", name="selector",
        settings=("toy-k4",), input_key=f"inputs/sha256/{sha}", input_sha256=sha,
        input_format="tar.gz", filename="selector.tar.gz", selection_only=False,
        created_at=utc_now(), kind="container", selector_backend="local"))
    return sid


def _queued(redis_conn, name: str) -> list[str]:
    return Queue(name, connection=redis_conn).job_ids


def test_container_audits_go_to_the_selectors_queue_and_scores_audits_to_audit(
        store, redis_conn, catalog):
    scores = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    container = _container_submission(store)
    assert jobs.queue_for(container=True) == defaults.SELECTOR_QUEUE == "selectors"
    assert jobs.queue_for(container=False) == defaults.AUDIT_QUEUE
    assert jobs.enqueue_audit(redis_conn, container, container=True).origin == "selectors"
    assert jobs.enqueue_audit(redis_conn, scores, container=False).origin == "audit"
    assert _queued(redis_conn, "selectors") == [f"audit-{container}"]
    assert _queued(redis_conn, "audit") == [f"audit-{scores}"]


def test_the_reconciler_routes_audits_like_the_submission_route(store, redis_conn,
                                                                 catalog):
    scores = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    container = _container_submission(store)
    result = jobs.reconcile(store, redis_conn)  # Redis lost its queues: both are re-enqueued
    assert sorted(result.enqueued) == sorted([scores, container])
    assert _queued(redis_conn, "selectors") == [f"audit-{container}"]
    assert _queued(redis_conn, "audit") == [f"audit-{scores}"]
    assert jobs.reconcile(store, redis_conn).enqueued == ()  # pending jobs are not doubled


def test_the_reconciler_restarts_a_readout_submission_as_a_readout_audit(store, redis_conn):
    """A readout upload whose job Redis lost is re-enqueued as the readout audit, not as the
    retrieval audit (which would fail it as a scores file it is not)."""
    body = b"checked readout table"
    sha = hashlib.sha256(body).hexdigest()
    store.put_if_absent(f"inputs/readout/sha256/{sha}", body)
    sid = new_submission_id()
    SubmissionRepo(store).create(Manifest(
        submission_id=sid, owner="tok-test", owner_name="test", name="features",
        settings=("door-readout-v1",), input_key=f"inputs/readout/sha256/{sha}", input_sha256=sha,
        input_format="parquet", filename="features.parquet", selection_only=False,
        created_at=utc_now(), kind="features"))
    assert jobs.reconcile(store, redis_conn).enqueued == (sid,)
    job = Job.fetch(f"audit-{sid}", connection=redis_conn)
    assert job.func_name == "service.queues.readout_jobs.readout_audit_job"
    assert job.origin == "audit"


def test_site_writes_only_changed_files_and_drops_vanished_ones(store):
    from service.submissions.publishing import LEADERBOARD_PREFIX, write_site

    assert write_site(store, {"index.json": b"1", "reports/a.json": b"a"}) == 2
    assert write_site(store, {"index.json": b"2", "reports/a.json": b"a"}) == 1
    assert store.get_bytes(LEADERBOARD_PREFIX + "index.json") == b"2"
    assert write_site(store, {"index.json": b"2"}) == 0
    assert not store.exists(LEADERBOARD_PREFIX + "reports/a.json")


def test_reconciler_finishes_or_discards_half_made_records(store, redis_conn, catalog):
    sid = stored_submission(store, scores_csv(catalog.load_transfer("toy-k4")))
    store.delete(SubmissionRepo.status_key(sid))  # crashed between manifest and status
    store.put_bytes("open/sub-20260101000000-000000000000", b"")  # crashed before the manifest
    result = jobs.reconcile(store, redis_conn)
    assert result.enqueued == (sid,)
    assert SubmissionRepo(store).status(sid).state is State.QUEUED
    assert SubmissionRepo(store).open_ids() == [sid]
