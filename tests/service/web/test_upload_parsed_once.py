"""An upload is parsed and validated once, by the web process; the worker audits the stored table.

The web request is counted (one read of the file, one validation); then every
reader of scores is made to raise and the queued audit runs in this process
(rq SimpleWorker): it publishes, so the worker never parsed the upload.
"""

from __future__ import annotations

import io
import json

import pytest

import leaderboard.scores.upload as upload
from leaderboard.scores import decode_scores
from service.submissions.records import State, SubmissionRepo
from tests.support.servers import ADMIN_TOKEN, bearer, run_jobs, scores_csv

READERS = ("plain_csv_frame", "read_csv_bytes", "read_bounded_parquet", "read_json_rows",
           "parse_scores_table")
"""Every parser `leaderboard.scores.upload` calls: one per format, and the validation."""


class ParsedAgain(AssertionError):
    """A reader of scores ran where the upload must not be parsed."""


@pytest.fixture()
def counted(monkeypatch):
    """Calls of each reader of `leaderboard.scores.upload`, counted."""
    calls = {name: 0 for name in READERS}
    for name in READERS:
        real = getattr(upload, name)

        def counting(*args, _name=name, _real=real, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(upload, name, counting)
    return calls


def _refuse_parsing(monkeypatch) -> None:
    for name in READERS:
        def refuse(*args, _name=name, **kwargs):
            raise ParsedAgain(f"{_name} ran in the worker")

        monkeypatch.setattr(upload, name, refuse)


def test_the_worker_audits_the_table_the_web_process_validated(store, redis_conn, catalog,
                                                               counted, client, monkeypatch):
    token = client.post("/api/v1/tokens", json={"name": "lab-a", "owner": "lab-a"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    data = catalog.load_transfer("toy-k4")
    response = client.post("/api/v1/submissions", headers=bearer(token),
                           data={"file": (io.BytesIO(scores_csv(data)), "scores.csv"),
                                 "setting": "toy-k4"}, content_type="multipart/form-data")
    assert response.status_code == 202, response.get_data(as_text=True)
    assert counted["plain_csv_frame"] == 1 and counted["parse_scores_table"] == 1
    sid = response.json["id"]
    manifest = SubmissionRepo(store).manifest(sid)
    stored = decode_scores(store.get_bytes(manifest.scores_key))
    assert [(s.setting_id, s.scores.shape) for s in stored] == [("toy-k4", data.outcomes.shape[:2])]

    _refuse_parsing(monkeypatch)
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.PUBLISHED, status.reason
    assert status.reports == ("toy-k4",)


def test_a_manifest_without_a_stored_table_is_parsed_by_the_worker(store, redis_conn,
                                                                    catalog, counted, client):
    """Submissions stored before the validated table was: the worker reads their upload."""
    token = client.post("/api/v1/tokens", json={"name": "lab-a", "owner": "lab-a"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    response = client.post("/api/v1/submissions", headers=bearer(token),
                           data={"file": (io.BytesIO(scores_csv(catalog.load_transfer("toy-k4"))),
                                          "scores.csv"), "setting": "toy-k4"},
                           content_type="multipart/form-data")
    sid = response.json["id"]
    repo = SubmissionRepo(store)
    older = {**repo.manifest(sid).to_dict(), "scores_key": None}
    store.put_bytes(repo.manifest_key(sid), json.dumps(older).encode())
    run_jobs(store, redis_conn, catalog)
    assert repo.status(sid).state is State.PUBLISHED
    assert counted["parse_scores_table"] == 2  # the web process's, then the worker's
