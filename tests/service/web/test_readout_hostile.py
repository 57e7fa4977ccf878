"""Hostile readout uploads in the real app (real Redis, real local store), beyond those of
`test_readout_submissions.py`: Parquet bombs, too many or no features, an NPZ over the
unpacked limit, an id over 200 characters, a body over the upload limit and a program sent
where none is taken. Each is refused with the field (and where there is one the line and
value) named, before the bytes it hides are decoded, and nothing is stored."""

from __future__ import annotations

import io
import threading
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from werkzeug.serving import make_server

from leaderboard.readout.upload import MAX_DECODED_BYTES, MAX_FEATURES, MAX_ID_CHARS
from tests.support.paths import REPO_ROOT
from tests.support.readout_service import SETTING, features_npz, parquet_bytes
from tests.support.selectors import selector_archive
from tests.support.servers import ADMIN_TOKEN, bearer, make_app

LIMIT = 8_000_000
"""The upload limit of the app under test (bytes)."""


@pytest.fixture()
def serve(store, redis_conn, catalog, readout):
    """`serve(**config)`: the app with `config` behind a real HTTP server (werkzeug, in a
    thread) on a free port, and a lab token: (url, token)."""
    servers = []

    def start(**config):
        app = make_app(store, redis_conn, catalog, frozen_root=str(readout["frozen"]), max_upload_bytes=LIMIT,
                       **config)
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        token = app.test_client().post("/api/v1/tokens", json={"name": "lab-h", "owner": "lab-h"},
                                       headers=bearer(ADMIN_TOKEN)).json["token"]
        return f"http://127.0.0.1:{server.server_port}", token

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(5)


@pytest.fixture()
def client(serve):
    return serve()


class Answer:
    """A response as the tests read it: `status_code` and the JSON body as `json`."""

    def __init__(self, response: requests.Response) -> None:
        self.status_code = response.status_code
        self.json = response.json()


def _submit(client, data: bytes, filename: str, part: str = "file", **fields) -> Answer:
    url, token = client
    return Answer(requests.post(f"{url}/api/v1/submissions", headers=bearer(token), timeout=120,
                                files={part: (filename, data)}, data={"setting": SETTING, **fields}))


def _nothing_stored(store) -> None:
    assert store.list_keys("inputs/") == [] and store.list_keys("submissions/") == []


def _ids(readout) -> np.ndarray:
    return pd.read_parquet(readout["weak"])["observation_id"].to_numpy(dtype=str)


def _refused(response, filename: str, field, line=None, status: int = 422) -> dict:
    assert response.status_code == status, response.json
    error = response.json["error"]
    assert error["source"] == filename and error["field"] == field and error["line"] == line, error
    return error


# ------------------------------------------------------------------ Parquet bombs

def test_a_parquet_row_bomb_is_refused_from_its_footer(client, readout, store):
    rows = 5_000_000  # one repeated row: a few KB on the wire, 5 million rows decoded
    table = pa.table({"observation_id": pa.array(["o00001"] * rows), "f0": pa.array(np.zeros(rows))})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    assert len(buffer.getvalue()) < LIMIT
    error = _refused(_submit(client, buffer.getvalue(), "bomb.parquet"), "bomb.parquet", None)
    assert f"has {rows} rows; at most" in error["message"], error
    _nothing_stored(store)


def test_a_parquet_cell_bomb_is_refused_before_its_cells_are_expanded(client, readout, store):
    ids = _ids(readout)
    # one 4 MB id in a dictionary page, used by every row: 4 MB x rows once expanded
    huge = pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(ids), dtype=np.int32)), pa.array(["o" * 4_000_000]))
    table = pa.table({"observation_id": huge, "f0": pa.array(np.zeros(len(ids)))})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    assert len(buffer.getvalue()) < LIMIT
    error = _refused(_submit(client, buffer.getvalue(), "cells.parquet"), "cells.parquet", "observation_id",
                     line=2)
    assert "at most 200 are read" in error["message"], error
    _nothing_stored(store)


# ------------------------------------------------------------------ features

def test_more_than_4096_features_are_refused(client, readout, store):
    ids = _ids(readout)[:50]
    wide = features_npz(ids, np.zeros((len(ids), MAX_FEATURES + 1), dtype=np.float32))
    error = _refused(_submit(client, wide, "wide.npz"), "wide.npz", "features")
    assert f"has {MAX_FEATURES + 1} features; 1 to {MAX_FEATURES} are taken" in error["message"]
    frame = pd.DataFrame(np.zeros((len(ids), MAX_FEATURES + 1), dtype=np.float32),
                         columns=[f"f{j}" for j in range(MAX_FEATURES + 1)])
    frame.insert(0, "observation_id", ids)
    error = _refused(_submit(client, parquet_bytes(frame), "wide.parquet"), "wide.parquet", "features")
    assert f"has {MAX_FEATURES + 1} features" in error["message"]
    too_wide = frame.assign(**{f"f{MAX_FEATURES + 1}": 0.0})  # past the reader's column bound
    error = _refused(_submit(client, parquet_bytes(too_wide), "wider.parquet"), "wider.parquet", None)
    assert f"has {MAX_FEATURES + 3} columns; at most {MAX_FEATURES + 2} are read" in error["message"]
    _nothing_stored(store)


def test_no_feature_is_refused(client, readout, store):
    ids = _ids(readout)
    error = _refused(_submit(client, features_npz(ids, np.zeros((len(ids), 0))), "none.npz"), "none.npz",
                     "features")
    assert "has 0 features; 1 to 4096 are taken" in error["message"]
    only_ids = pd.DataFrame({"observation_id": ids})
    error = _refused(_submit(client, parquet_bytes(only_ids), "none.parquet"), "none.parquet", "header")
    assert error["value"] == "(no feature column)"
    _nothing_stored(store)


def test_an_npz_over_the_unpacked_limit_is_refused_from_its_zip_headers(client, readout, store):
    buffer = io.BytesIO()
    chunk = bytes(16 * 1024 * 1024)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("observation_id.npy", _npy(np.array(["o00001"])))
        with archive.open("features.npy", "w", force_zip64=True) as member:
            for _ in range(MAX_DECODED_BYTES // len(chunk) + 1):
                member.write(chunk)
    assert len(buffer.getvalue()) < LIMIT
    error = _refused(_submit(client, buffer.getvalue(), "big.npz"), "big.npz", None)
    assert f"at most {MAX_DECODED_BYTES} are read" in error["message"], error
    _nothing_stored(store)


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def test_an_id_over_200_characters_is_refused(client, readout, store):
    ids = _ids(readout).astype(object)
    long_id = "o" * (MAX_ID_CHARS + 1)
    ids[4] = long_id
    values = np.zeros((len(ids), 2))
    error = _refused(_submit(client, features_npz(ids.astype(str), values), "long.npz"), "long.npz",
                     "observation_id")
    assert f"up to {MAX_ID_CHARS + 1} characters; at most {MAX_ID_CHARS}" in error["message"]
    frame = pd.DataFrame({"observation_id": ids, "f0": 0.0})
    error = _refused(_submit(client, parquet_bytes(frame), "long.parquet"), "long.parquet", "observation_id",
                     line=6)
    assert f"at most {MAX_ID_CHARS} are read" in error["message"], error
    _nothing_stored(store)


# ------------------------------------------------------------------ the request

def test_a_body_over_the_upload_limit_is_413_on_a_readout_setting(client, readout, store):
    ids = _ids(readout)
    big = features_npz(ids, np.random.default_rng(0).normal(size=(len(ids), 1500)))
    assert len(big) > LIMIT
    response = _submit(client, big, "big.npz")
    assert response.status_code == 413, response.json
    assert response.json["error"]["limit_bytes"] == LIMIT
    _nothing_stored(store)


def test_a_program_is_refused_where_none_is_taken(serve, readout, store):
    archive = selector_archive(REPO_ROOT / "examples" / "readout_programs" / "pooled8")
    no_sandbox = serve(sandbox="none")
    response = _submit(no_sandbox, archive, "p.tar.gz", part="selector")
    assert response.status_code == 422 and response.json["error"]["field"] == "selector", response.json
    assert "does not run programs" in response.json["error"]["message"]
    local = serve()
    response = _submit(local, archive, "p.tar.gz", part="selector", input="predictions")
    assert response.status_code == 422 and response.json["error"]["field"] == "input", response.json
    response = _submit(local, archive, "p.tar.gz", part="selector", image="lab/p@sha256:" + "a" * 64)
    assert response.status_code == 422 and response.json["error"]["field"] == "image", response.json
    (readout["sealed_dir"] / "door-v1-labels.parquet").unlink()
    response = _submit(local, archive, "p.tar.gz", part="selector")
    assert response.status_code == 404 and response.json["error"]["code"] == "not_available", response.json
    _nothing_stored(store)
