"""Where a readout submission's audit is queued (real app, real Redis, real local store): a
program's goes to the `selectors` queue, served by the process that holds the sandbox, a
file's to `audit`, both when the submission is created and when the reconciler enqueues it
again after Redis lost its queues."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rq import Queue

from service.process import defaults
from service.queues import reconcile
from tests.support.paths import REPO_ROOT
from tests.support.readout_service import SETTING, parquet_bytes, readout_root
from tests.support.selectors import selector_archive
from tests.support.servers import ADMIN_TOKEN, bearer, make_app



@pytest.fixture()
def client(tmp_path, monkeypatch, store, redis_conn, catalog):
    files = readout_root(tmp_path / "readout")
    monkeypatch.setenv("EXPAUDIT_READOUT_SEALED", str(files["sealed_dir"]))
    app = make_app(store, redis_conn, catalog, frozen_root=str(files["frozen"]), sandbox="local")
    client = app.test_client()
    token = client.post("/api/v1/tokens", json={"name": "lab-q", "owner": "lab-q"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    return client, token, files


def _queued(redis_conn) -> dict[str, list[str]]:
    return {name: Queue(name, connection=redis_conn).job_ids
            for name in (defaults.AUDIT_QUEUE, defaults.SELECTOR_QUEUE)}


def test_a_program_is_audited_on_the_selectors_queue_and_a_file_on_audit(client, redis_conn, store):
    client, token, files = client
    archive = selector_archive(REPO_ROOT / "examples" / "readout_programs" / "pooled8")
    program = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                          data={"selector": (io.BytesIO(archive), "pooled8.tar.gz"), "setting": SETTING})
    assert program.status_code == 202, program.json
    assert program.json["kind"] == "features" and program.json["selector"]["backend"] == "local"
    upload = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                         data={"file": (io.BytesIO(parquet_bytes(pd.read_parquet(files["weak"]))), "w.parquet"),
                               "setting": SETTING})
    assert upload.status_code == 202, upload.json
    expected = {defaults.AUDIT_QUEUE: [f"audit-{upload.json['id']}"],
                defaults.SELECTOR_QUEUE: [f"audit-{program.json['id']}"]}
    assert _queued(redis_conn) == expected

    redis_conn.flushdb()  # Redis lost its queues: the store is the record
    result = reconcile(store, redis_conn)
    assert sorted(result.enqueued) == sorted([program.json["id"], upload.json["id"]])
    assert _queued(redis_conn) == expected
