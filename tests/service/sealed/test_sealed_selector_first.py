"""Selector first on a sealed setting whose matrix runners still have to fill: a selector
that crashes fails the submission in seconds, before any rollout is enqueued, and gives the
day's sealed quota back (docs/sealed.md, "The daily quota")."""

from __future__ import annotations

import pytest
from rq import Queue

from sandbox.local import LocalSandbox
from service.catalog.catalog import BenchmarkCatalog
from service.process import defaults
from service.sealed.quota import claims_today
from service.submissions.records import Fault, State, SubmissionRepo
from tests.support.rollouts import HIDDEN, HIDDEN_STATES
from tests.support.selectors import SANDBOX_OK, run_selector_jobs, selector_archive
from tests.support.servers import ADMIN_TOKEN, bearer, make_app
from tests.support.submissions import submit_selector
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids, real_data_available

pytestmark = [pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare "
                                 "and setpriv"),
              pytest.mark.skipif(not real_data_available(), reason="frozen data not built")]

CRASHING = "import json\nprint('reading /input')\nscenes = json.load(open('/input/missing.json'))\n"
"""A selector that crashes on its third line, before it writes any score."""


def test_a_crashing_selector_on_a_sealed_setting_fails_before_any_rollout(tmp_path, store,
                                                                          redis_conn):
    root = tmp_path / "frozen"
    copy_library(root, experience_ids(10))
    copy_query_set(root, "stack-hidden", HIDDEN_STATES)
    catalog = BenchmarkCatalog(root)
    assert not catalog.completeness(HIDDEN).complete and catalog.fillable(HIDDEN)
    client = make_app(store, redis_conn, catalog, sandbox="local").test_client()
    token = client.post("/api/v1/tokens", json={"name": "lab", "owner": "lab"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    selector = tmp_path / "crash"
    selector.mkdir()
    (selector / "selector.py").write_text(CRASHING)
    created = submit_selector(client, token, selector_archive(selector), "crash.tar.gz",
                              setting=HIDDEN, name="crash")
    assert created.status_code == 202, created.get_data(as_text=True)
    sid = created.json["id"]
    assert claims_today(store, "lab") == 1  # counted at upload

    run_selector_jobs(store, redis_conn, catalog, LocalSandbox(work_root=tmp_path / "work"),
                      wall_seconds=30)

    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.SUBMITTER, status
    assert status.reason.startswith("selector crashed"), status.reason
    assert "not counted against the day's sealed quota" in status.reason
    assert status.rollouts is None  # no rollout was planned, let alone run
    assert Queue(defaults.ROLLOUT_QUEUE, connection=redis_conn).count == 0
    assert not redis_conn.keys("rq:job:rollout*")
    assert claims_today(store, "lab") == 0  # the crash did not spend the day's quota
    shown = client.get(f"/api/v1/submissions/{sid}", headers=bearer(token)).json
    assert shown["state"] == "failed" and shown["selector"]["run"]["status"] == "crashed"
    run = client.get(f"/api/v1/submissions/{sid}/run", headers=bearer(token)).json
    assert "missing.json" in run["stderr_tail"]
