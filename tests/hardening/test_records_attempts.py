"""Issue 30, item 6 (first half): a failed submission's record says how many executions ran.

The job boundary wrote the failure (and the note before a retry) from the status it read
before the run, undoing what the execution had written: every failed submission showed
`attempts: 0`, and a retried one went back to `queued`. Seen failing on the old code:
attempts 0 after a submitter failure, after a final infrastructure failure
(`tests/service/queues/test_jobs.py::test_last_retry_fails_as_infrastructure`), and after each retry.
"""

from __future__ import annotations

import hashlib

from rq import Queue
from rq.job import Job
from rq.registry import ScheduledJobRegistry

from service.process import defaults

from service.queues import jobs
from service.submissions.records import Fault, Manifest, State, SubmissionRepo, new_submission_id, utc_now
from tests.support.servers import run_jobs, scores_csv


def _stored(store, body: bytes) -> str:
    sha = hashlib.sha256(body).hexdigest()
    store.put_if_absent(f"inputs/sha256/{sha}", body)
    sid = new_submission_id()
    SubmissionRepo(store).create(Manifest(
        submission_id=sid, owner="tok-test", owner_name="test", name="rule", settings=("toy-k4",),
        input_key=f"inputs/sha256/{sha}", input_sha256=sha, input_format="csv",
        filename="scores.csv", selection_only=False, created_at=utc_now()))
    return sid


def test_a_submitter_failure_counts_its_attempt(store, redis_conn, catalog):
    body = scores_csv(catalog.load_transfer("toy-k4")).replace(b"toy-k4-e001", b"toy-k4-e777", 1)
    sid = _stored(store, body)
    jobs.enqueue_audit(redis_conn, sid, container=False)
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.SUBMITTER
    assert status.attempts == 1
    assert status.progress == 0.05  # what the execution wrote before it failed


def test_every_retried_execution_is_counted_up_to_the_final_failure(store, redis_conn,
                                                                     catalog):
    sid = _stored(store, scores_csv(catalog.load_transfer("toy-k4")))
    store.delete(SubmissionRepo(store).manifest(sid).input_key)  # fails every time
    job = jobs.enqueue_audit(redis_conn, sid, container=False)
    queue = Queue(defaults.AUDIT_QUEUE, connection=redis_conn)
    executions = len(defaults.JOB_RETRY_INTERVALS_S) + 1
    for attempt in range(1, executions + 1):
        run_jobs(store, redis_conn, catalog)
        status = SubmissionRepo(store).status(sid)
        assert status.attempts == attempt, (attempt, status)
        if attempt < executions:
            assert status.state is State.RUNNING and status.reason.startswith("retrying: ")
            ScheduledJobRegistry(queue=queue).remove(job.id)  # its backoff is over at once
            queue.enqueue_job(Job.fetch(job.id, connection=redis_conn))
    assert status.state is State.FAILED and status.fault is Fault.INFRASTRUCTURE
