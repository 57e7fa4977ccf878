"""The OpenAPI document covers the readout track: the answers of a real app serving a readout
setting (over real HTTP, on a real Redis and store) conform to the document, checked by
schemathesis like the generated requests of `test_openapi.py`, and the requests the track
takes (input, npz) are the document's."""

from __future__ import annotations

import threading

import pytest
import requests
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)
from werkzeug.serving import make_server

from service.web.openapi import openapi_document
from tests.support.readout_shards import add_images
from tests.support.readout_service import SETTING, predictions_npz, readout_root
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
schema = schemathesis.openapi.from_dict(openapi_document())


@pytest.fixture()
def served(tmp_path, monkeypatch, store, redis_conn, catalog):
    files = readout_root(tmp_path / "readout")
    add_images(files["frozen"] / "readout" / "door-v1", files["labels"])
    monkeypatch.setenv("EXPAUDIT_FROZEN_ROOT", str(files["frozen"]))  # the jobs' configuration
    monkeypatch.setenv("EXPAUDIT_READOUT_SEALED", str(files["sealed_dir"]))
    app = make_app(store, redis_conn, catalog, frozen_root=str(files["frozen"]))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = app.test_client().post("/api/v1/tokens", json={"name": "lab-o", "owner": "lab-o"},
                                   headers=bearer(ADMIN_TOKEN)).json["token"]
    yield f"http://127.0.0.1:{server.server_port}", token, files
    server.shutdown()
    thread.join(5)


def _conforms(base_url: str, path: str, method: str = "GET", **parts):
    case = schema[path][method].Case(**parts)
    response = case.call(base_url=base_url)
    case.validate_response(response, checks=CHECKS)
    return response


def test_readout_answers_conform_to_the_document(served, store, redis_conn, catalog):
    url, token, files = served
    listed = _conforms(url, "/api/v1/settings").json()["settings"]
    assert {s["kind"] for s in listed} == {"retrieval", "readout"}
    one = _conforms(url, "/api/v1/settings/{setting_id}", path_parameters={"setting_id": SETTING}).json()
    assert one["kind"] == "readout" and "completeness" not in one
    tree = _conforms(url, "/api/v1/settings/{setting_id}/selector-input", path_parameters={"setting_id": SETTING})
    assert tree.status_code == 200  # application/gzip: content_type_conformance
    assert _conforms(url, "/api/v1/settings/{setting_id}/trajectories",
                     path_parameters={"setting_id": SETTING}).status_code == 404

    labels = files["labels"]
    confirm = labels[labels["split"] == "confirm"]
    body = predictions_npz(confirm["observation_id"], confirm["coordinate"].fillna(0.0).to_numpy())
    created = requests.post(f"{url}/api/v1/submissions", headers=bearer(token), timeout=30,
                            files={"file": ("p.npz", body)}, data={"setting": SETTING, "input": "predictions"})
    assert created.status_code == 202, created.text
    schema["/api/v1/submissions"]["POST"].validate_response(created)
    assert created.json()["kind"] == "predictions"
    refused = requests.post(f"{url}/api/v1/submissions", headers=bearer(token), timeout=30,
                            files={"file": ("p.npz", body)}, data={"setting": SETTING, "input": "scores"})
    assert refused.status_code == 422
    schema["/api/v1/submissions"]["POST"].validate_response(refused)
    run_jobs(store, redis_conn, catalog)
    sid = created.json()["id"]
    auth = {"Authorization": f"Bearer {token}"}
    status = _conforms(url, "/api/v1/submissions/{submission_id}", path_parameters={"submission_id": sid},
                       headers=auth).json()
    assert status["state"] == "published", status
    report = _conforms(url, "/api/v1/submissions/{submission_id}/report", path_parameters={"submission_id": sid},
                       headers=auth).json()
    assert report["schema_version"] == "expaudit-readout-submission/1"


def test_the_document_names_the_readout_fields():
    document = openapi_document()
    post = document["paths"]["/api/v1/submissions"]["post"]
    form = post["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert form["input"]["enum"] == ["features", "predictions"] and "npz" in form["format"]["enum"]
    status = document["components"]["schemas"]["SubmissionStatus"]["properties"]
    assert set(status["kind"]["enum"]) == {"scores", "container", "features", "predictions"}
    readout = document["components"]["schemas"]["ReadoutSetting"]
    assert "completeness" not in readout["required"] and "downloads" not in readout["required"]
    assert readout["properties"]["kind"]["enum"] == ["readout"]
