"""Readout settings and submissions in the real app, on a real Redis and a real local store.

The readout settings are listed beside the retrieval ones with their kind; an upload of
features or predictions is checked once by the web process, audited by the queued job with
the sealed labels and served as the confirm summary alone; every hostile upload is a 422
naming the file, line, field and value, and stores nothing.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from leaderboard.readout import read_bank, read_features, run_readout_audit
from service.submissions.records import State, SubmissionRepo
from tests.support.readout_service import (SETTING, features_npz, parquet_bytes, predictions_npz,
                                           readout_root)
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs
from tests.support.submissions import submit_scores


@pytest.fixture()
def readout(tmp_path, monkeypatch):
    files = readout_root(tmp_path / "readout")
    monkeypatch.setenv("EXPAUDIT_FROZEN_ROOT", str(files["frozen"]))  # the worker's configuration
    monkeypatch.setenv("EXPAUDIT_READOUT_SEALED", str(files["sealed_dir"]))
    return files


@pytest.fixture()
def app(store, redis_conn, catalog, readout):
    return make_app(store, redis_conn, catalog, frozen_root=str(readout["frozen"]))


@pytest.fixture()
def token(client):
    return client.post("/api/v1/tokens", json={"name": "lab-r", "owner": "lab-r"},
                       headers=bearer(ADMIN_TOKEN)).json["token"]


def _weak(readout) -> pd.DataFrame:
    return pd.read_parquet(readout["weak"])


def _nothing_stored(store) -> None:
    assert store.list_keys("inputs/") == [] and store.list_keys("submissions/") == []


def test_settings_list_both_kinds(client):
    settings = client.get("/api/v1/settings").json["settings"]
    kinds = {s["id"]: s["kind"] for s in settings}
    assert kinds[SETTING] == "readout"
    assert {kinds[s] for s in ("toy-k4", "toy-k3")} == {"retrieval"}
    readout = client.get(f"/api/v1/settings/{SETTING}").json
    assert (readout["task"], readout["unit"], readout["accepts_submissions"]) == ("door", "deg", True)
    assert readout["audited_split"] == "confirm" and readout["sealed"] is True


def test_a_setting_without_its_sealed_labels_takes_no_submission(client, token, readout, store):
    (readout["sealed_dir"] / "door-v1-labels.parquet").unlink()
    assert client.get(f"/api/v1/settings/{SETTING}").json["accepts_submissions"] is False
    frame = _weak(readout)
    response = submit_scores(client, token, parquet_bytes(frame), "weak.parquet", setting=SETTING)
    assert response.status_code == 404 and response.json["error"]["code"] == "not_available"
    _nothing_stored(store)


def test_features_are_audited_on_confirm_and_served_as_the_summary_alone(client, token, readout, store,
                                                                          redis_conn, catalog):
    frame = _weak(readout)
    response = submit_scores(client, token, parquet_bytes(frame), "weak.parquet", name="weak",
                             setting=SETTING)
    assert response.status_code == 202, response.json
    sid = response.json["id"]
    assert response.json["kind"] == "features"
    run_jobs(store, redis_conn, catalog)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.PUBLISHED, status
    served = client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token)).json
    offline = run_readout_audit(read_bank(readout["bank"], readout["sealed"]),
                                [read_features(readout["weak"], "weak")], split="confirm")
    row = offline["representations"][0]
    got = served["representations"][0]
    for metric, block in row["summary"].items():
        for key in ("mean", "low", "high"):
            expected = None if block[key] is None else round(block[key], 3)
            assert got["summary"][metric][key] == expected, (metric, key)
        assert got["summary"][metric]["n"] == block["n"]
    # nothing per initialization, no curve, no failure predictor scored on the sealed eval labels
    assert got["initializations"] == [] and got["curves"] == [] and got["failure_prediction"]["policies"] == {}
    text = json.dumps(served)
    for m in row["initializations"]:
        assert m["initialization"] not in text
    html = client.get(f"/api/v1/submissions/{sid}/report?format=html", headers=bearer(token))
    assert html.status_code == 200 and b"<svg" in html.data


def test_predictions_are_audited_as_given(client, token, readout, store, redis_conn, catalog):
    labels = readout["labels"]
    confirm = labels[(labels["split"] == "confirm")]
    data = predictions_npz(confirm["observation_id"], np.nan_to_num(confirm["coordinate"].to_numpy()))
    response = submit_scores(client, token, data, "perfect.npz", input="predictions",
                             setting=SETTING)
    assert response.status_code == 202, response.json
    run_jobs(store, redis_conn, catalog)
    served = client.get(f"/api/v1/submissions/{response.json['id']}/report", headers=bearer(token)).json
    summary = served["representations"][0]["summary"]
    assert summary["mae_natural"]["mean"] == 0.0 and summary["gain_error"]["mean"] == 0.0


# ------------------------------------------------------------------ hostile uploads

def _bad(frame: pd.DataFrame, row: int, column: str, value) -> bytes:
    frame = frame.copy()
    frame.loc[row, column] = value
    return parquet_bytes(frame)


def _hostile(readout) -> dict:
    """name -> (bytes, filename, fields, expected (field, line, value) of the error)."""
    frame = _weak(readout)
    ids = frame["observation_id"].to_numpy(dtype=str)
    values = frame[["f0", "f1", "f2"]].to_numpy()
    dup = frame.copy()
    dup.loc[7, "observation_id"] = dup.loc[3, "observation_id"]
    confirm_first = int(np.flatnonzero(readout["labels"]["split"].to_numpy() == "confirm")[0])
    bomb = io.BytesIO()  # 20 MB of zeros packed into about 20 KB: refused from the zip's headers
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        ids_npy, npy = io.BytesIO(), io.BytesIO()
        np.save(ids_npy, ids)
        archive.writestr("observation_id.npy", ids_npy.getvalue())
        np.lib.format.write_array_header_1_0(npy, np.lib.format.header_data_from_array_1_0(np.zeros((25_000, 100))))
        archive.writestr("features.npy", npy.getvalue() + bytes(20_000_000))
    pickled = io.BytesIO()
    np.savez(pickled, observation_id=np.array(list(ids), dtype=object), features=values)
    return {
        "nan": (_bad(frame, 5, "f1", np.nan), "f.parquet", {}, ("f1", 7, "nan")),
        "inf in npz": (features_npz(ids, np.where(np.arange(len(ids))[:, None] == 9, np.inf, values)),
                       "f.npz", {}, ("f0", 11, "inf")),
        "duplicate id": (parquet_bytes(dup), "f.parquet", {}, ("observation_id", 9, ids[3])),
        "unknown id": (_bad(frame, 4, "observation_id", "o99999"), "f.parquet", {},
                       ("observation_id", 6, "o99999")),
        "missing confirm row": (parquet_bytes(frame.drop(index=confirm_first)), "f.parquet", {},
                                ("observation_id", None, ids[confirm_first])),
        "wrong size": (features_npz(ids, values[:-1]), "f.npz", {}, ("features", None, None)),
        "text feature": (parquet_bytes(frame.astype({"f2": str})), "f.parquet", {}, ("f2", None, None)),
        "columns out of order": (parquet_bytes(frame[["observation_id", "f1", "f0", "f2"]]), "f.parquet", {},
                                 ("header", None, "f1")),
        "compression bomb": (bomb.getvalue(), "f.npz", {}, ("features", None, None)),
        "pickled ids": (pickled.getvalue(), "f.npz", {}, ("observation_id", None, None)),
        "extra array": (_extra_array(ids, values), "f.npz", {}, ("extra", None, None)),
        "not a file": (b"PK\x03\x04 this is not a zip", "f.npz", {}, (None, None, None)),
        "prediction NaN": (predictions_npz(ids, np.where(np.arange(len(ids)) == 2, np.nan, 1.0)), "p.npz",
                           {"input": "predictions"}, ("prediction", 4, "nan")),
        "features as predictions": (parquet_bytes(frame), "p.parquet", {"input": "predictions"},
                                    ("header", None, "f0")),
    }


def _extra_array(ids, values) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=ids, features=values, extra=np.zeros(3))
    return buffer.getvalue()


@pytest.mark.parametrize("case", ["nan", "inf in npz", "duplicate id", "unknown id", "missing confirm row",
                                  "wrong size", "text feature", "columns out of order", "compression bomb",
                                  "pickled ids", "extra array", "not a file", "prediction NaN",
                                  "features as predictions"])
def test_a_hostile_upload_is_named_and_nothing_is_stored(client, token, readout, store, case):
    data, filename, fields, (field, line, value) = _hostile(readout)[case]
    response = submit_scores(client, token, data, filename, setting=SETTING, **fields)
    assert response.status_code == 422, response.json
    error = response.json["error"]
    assert error["source"] == filename
    assert error["field"] == field and error["line"] == line, error
    if value is not None:
        assert error["value"] == value
    if case == "compression bomb":  # refused from the zip's headers, before it is unpacked
        assert "more than 100 times" in error["message"], error
    _nothing_stored(store)


def test_bad_request_fields_are_named(client, token, readout, store):
    frame = parquet_bytes(_weak(readout))
    def field(filename, **fields):
        response = submit_scores(client, token, frame, filename, setting=SETTING, **fields)
        return response.json["error"]["field"]

    assert field("f.parquet", input="scores") == "input"
    assert field("f.csv") == "format"
    assert field("f.bin", format="pickle") == "format"
    _nothing_stored(store)
