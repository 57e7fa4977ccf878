"""Selector archives and the small policy setting that container submissions run on."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path


SETTING = "stack-replay-k3-orig"


STATES = ["stack-orig-s00", "stack-orig-s10", "stack-orig-s20", "stack-orig-s30"]


SANDBOX_OK = os.geteuid() == 0 and shutil.which("unshare") and shutil.which("setpriv")


def selector_archive(directory: Path, top: str | None = None) -> bytes:
    """A .tar.gz of a selector directory (files at the top, or under folder `top`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(Path(directory).rglob("*")):
            if "__pycache__" in path.parts:
                continue
            name = path.relative_to(directory).as_posix()
            tar.add(path, arcname=f"{top}/{name}" if top else name, recursive=False)
    return buffer.getvalue()


def run_selector_jobs(store, redis_conn, catalog, sandbox, wall_seconds: float) -> None:
    """Every queued selector job run in this process (rq's SimpleWorker in burst mode) with
    `sandbox` and a run limit of `wall_seconds`; the sandbox is closed after."""
    from rq import Queue, SimpleWorker

    from sandbox.base import Limits
    from service.process import defaults
    from service.queues import jobs
    from service.submissions.publishing import AuditOptions

    jobs.install_context(jobs.JobContext(store=store, redis=redis_conn, catalog=catalog,
                                         options=AuditOptions(100, 100), sandbox=sandbox,
                                         selector_limits=Limits(wall_seconds=wall_seconds)))
    try:
        SimpleWorker([Queue(defaults.SELECTOR_QUEUE, connection=redis_conn)],
                     connection=redis_conn).work(burst=True, logging_level="WARNING")
    finally:
        jobs.install_context(None)
        sandbox.close()


def assert_sandbox_failure_is_the_services_fault(tmp_path: Path, redis_url: str, db: int, sandbox,
                                                 expected: str) -> None:
    """Two container submissions through the worker with `sandbox`, which cannot set a run up:
    the first is retried, the last (no retries left) fails with fault `infrastructure` and
    reason `expected`, and nothing either one shows names a host path.

    `db` is a Redis database of the test's own (a module's service stack may serve db 0)."""
    import json
    import sys

    import redis
    from rq.job import Job

    from service.catalog.catalog import BenchmarkCatalog
    from service.store.storage import LocalStore
    from service.submissions.records import Fault, State, SubmissionRepo
    from tests.support.paths import REPO_ROOT
    from tests.support.servers import ADMIN_TOKEN, bearer, make_app
    from tests.support.submissions import submit_selector
    from tests.support.tiny_frozen import copy_cells, copy_library, copy_query_set, experience_ids

    copy_library(tmp_path / "frozen", experience_ids(3))
    copy_query_set(tmp_path / "frozen", "stack-orig", STATES[:1])
    copy_cells(tmp_path / "frozen", "stack-orig", experience_ids(3), STATES[:1])
    store, catalog = LocalStore(tmp_path / "store"), BenchmarkCatalog(tmp_path / "frozen")
    redis_conn = redis.Redis.from_url(redis_url.rsplit("/", 1)[0] + f"/{db}")
    redis_conn.flushdb()
    client = make_app(store, redis_conn, catalog, sandbox="local").test_client()
    token = client.post("/api/v1/tokens", json={"name": "lab", "owner": "lab"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    archive = selector_archive(REPO_ROOT / "examples" / "selectors" / "raw32")
    sids = []
    for name in ("first try", "last try"):
        created = submit_selector(client, token, archive, "raw32.tar.gz", setting=SETTING, name=name)
        assert created.status_code == 202, created.get_data(as_text=True)
        sids.append(created.json["id"])
    last = Job.fetch(f"audit-{sids[1]}", connection=redis_conn)
    last.retries_left = 0
    last.save()
    try:
        run_selector_jobs(store, redis_conn, catalog, sandbox, wall_seconds=10)
    finally:
        redis_conn.flushdb()
        redis_conn.close()
    repo = SubmissionRepo(store)
    retried, failed = repo.status(sids[0]), repo.status(sids[1])
    assert not retried.state.is_final and retried.reason == f"retrying: {expected}"
    assert failed.state is State.FAILED and failed.fault is Fault.INFRASTRUCTURE
    assert failed.reason == expected
    for sid in sids:
        run = client.get(f"/api/v1/submissions/{sid}/run", headers=bearer(token))
        shown = json.dumps(run.json) + json.dumps(client.get(f"/api/v1/submissions/{sid}",
                                                             headers=bearer(token)).json)
        assert run.json["status"] == "setup_failed", shown
        for host_path in ("/tmp/", str(REPO_ROOT), sys.prefix, "/root"):
            assert host_path not in shown
