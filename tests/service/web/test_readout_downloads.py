"""A readout bank's downloads: its observation images and public labels, never a sealed label.

Over the committed files (every bank's `labels.parquet` holds train and dev rows alone, and
`reports/reference-confirm.json` holds no per-initialization value) and over the served
downloads (the setting document lists them, each route serves the bank's file as it is, a
labels file that holds a sealed row is not offered, and `expaudit download` saves them from
a running service).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark_data.readout_banks import TASKS, bank_dir
from tests.support.readout_service import SETTING, readout_root
from tests.support.servers import ServiceStack, make_app, synthetic_setting, write_catalog

PUBLIC_SPLITS = {"train", "dev"}
SHARD = "images-train-00.npz"


# ------------------------------------------------------------------ committed files

@pytest.mark.parametrize("task", TASKS)
def test_committed_public_labels_hold_train_and_dev_alone(task):
    bank = bank_dir(task)
    labels = pd.read_parquet(bank / "labels.parquet")
    assert set(labels["split"]) == PUBLIC_SPLITS
    observations = pd.read_parquet(bank / "observations.parquet")
    sealed_ids = set(observations.loc[~observations["split"].isin(PUBLIC_SPLITS), "observation_id"])
    assert sealed_ids, "the bank has sealed observations"
    assert not sealed_ids & set(labels["observation_id"])


@pytest.mark.parametrize("task", TASKS)
def test_committed_reference_report_holds_no_per_initialization_value(task):
    report = json.loads((bank_dir(task) / "reports" / "reference-confirm.json").read_text())
    assert report["inputs"]["split"] == "confirm"
    observations = pd.read_parquet(bank_dir(task) / "observations.parquet")
    sealed_inits = set(observations.loc[observations["split"] == "confirm", "initialization"])
    text = json.dumps(report)
    assert not [i for i in sealed_inits if f'"{i}"' in text]
    for rep in report["representations"]:
        assert not rep.get("initializations") and not rep.get("curves"), rep["name"]


# ------------------------------------------------------------------ served files

@pytest.fixture()
def readout(tmp_path, monkeypatch):
    files = readout_root(tmp_path / "readout")
    bank = files["frozen"] / "readout" / "door-v1"
    images = np.zeros((3, 64, 64, 3), dtype=np.uint8)
    images[1, 10:20, 10:20] = 200
    np.savez(bank / SHARD, observation_id=np.array(["o00001", "o00002", "o00003"]),
             agentview=images, wrist=images[::-1])
    info = json.loads((bank / "bank.json").read_text())
    info["shards"] = {SHARD: (bank / SHARD).stat().st_size, "images-absent-00.npz": 1}
    (bank / "bank.json").write_text(json.dumps(info))
    monkeypatch.setenv("EXPAUDIT_FROZEN_ROOT", str(files["frozen"]))
    monkeypatch.setenv("EXPAUDIT_READOUT_SEALED", str(files["sealed_dir"]))
    return {**files, "served_bank": bank}


@pytest.fixture()
def client(store, redis_conn, catalog, readout):
    return make_app(store, redis_conn, catalog, frozen_root=str(readout["frozen"])).test_client()


def test_the_setting_lists_its_images_and_public_labels(client):
    downloads = client.get(f"/api/v1/settings/{SETTING}").json["downloads"]
    assert sorted(downloads) == ["images-train-00", "labels", "observations"]  # no absent shard
    listed = {s["id"]: s for s in client.get("/api/v1/settings").json["settings"]}
    assert listed[SETTING]["downloads"] == downloads
    assert downloads["labels"].endswith(f"/api/v1/settings/{SETTING}/files/labels.parquet")


def test_each_download_is_the_bank_file_and_labels_are_public_alone(client, readout):
    bank = readout["served_bank"]
    for key, url in client.get(f"/api/v1/settings/{SETTING}").json["downloads"].items():
        response = client.get(url)
        assert response.status_code == 200, (key, response.json)
        name = url.rsplit("/", 1)[-1]
        assert response.data == (bank / name).read_bytes()
        assert response.headers["Content-Disposition"] == f'attachment; filename="{SETTING}-{name}"'
    labels = pd.read_parquet(io.BytesIO(client.get(f"/api/v1/settings/{SETTING}/files/labels.parquet").data))
    assert set(labels["split"]) == PUBLIC_SPLITS
    sealed = pd.read_parquet(readout["sealed"])
    assert not set(sealed["observation_id"]) & set(labels["observation_id"])
    with np.load(io.BytesIO(client.get(f"/api/v1/settings/{SETTING}/files/{SHARD}").data)) as z:
        assert z["agentview"].shape == (3, 64, 64, 3) and z["agentview"][1].max() == 200


@pytest.mark.parametrize("name", ["bank.json", "outcomes.parquet", "..%2Fsealed%2Fdoor-v1-labels.parquet",
                                  "images-absent-00.npz", "door-v1-labels.parquet"])
def test_only_listed_files_are_served(client, name):
    response = client.get(f"/api/v1/settings/{SETTING}/files/{name}")
    assert response.status_code == 404 and response.json["error"]["code"] == "not_found"


def test_a_retrieval_setting_has_no_bank_files(client):
    response = client.get("/api/v1/settings/toy-k4/files/labels.parquet")
    assert response.status_code == 404 and response.json["error"]["field"] == "setting_id"


def test_labels_holding_a_sealed_row_are_not_offered(client, readout):
    bank = readout["served_bank"]
    public = pd.read_parquet(bank / "labels.parquet")
    sealed = pd.read_parquet(readout["sealed"])
    pd.concat([public, sealed.head(1)]).to_parquet(bank / "labels.parquet", index=False)
    downloads = client.get(f"/api/v1/settings/{SETTING}").json["downloads"]
    assert "labels" not in downloads and "observations" in downloads
    assert client.get(f"/api/v1/settings/{SETTING}/files/labels.parquet").status_code == 404


@pytest.mark.slow
def test_expaudit_download_saves_every_bank_file(tmp_path, redis_server, readout):
    """`expaudit download` against a running service (gunicorn, real HTTP) saves each file."""
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("toy-k4", k=4))
    stack = ServiceStack(tmp_path / "stack", redis_server, catalog, extra_env={
        "EXPAUDIT_FROZEN_ROOT": str(readout["frozen"]),
        "EXPAUDIT_READOUT_SEALED": str(readout["sealed_dir"])})
    (tmp_path / "stack").mkdir()
    try:
        stack.start_web(workers=1)
        out = tmp_path / "out"
        done = stack.run_cli("download", SETTING, "--out", str(out), "--server", stack.url, timeout=120)
        assert done.returncode == 0, done.stderr + stack.logs()
    finally:
        stack.stop()
    bank = readout["served_bank"]
    saved = sorted(p.name for p in Path(out).iterdir())
    assert saved == sorted(f"{SETTING}-{n}" for n in ("labels.parquet", "observations.parquet", SHARD))
    for name in saved:
        assert (out / name).read_bytes() == (bank / name[len(SETTING) + 1:]).read_bytes()
