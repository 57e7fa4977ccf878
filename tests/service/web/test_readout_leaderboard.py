"""A public readout submission is published on the readout leaderboard, a private one is not.

In the real app, on a real Redis and a real local store: features uploaded over the API
are audited by the queued job and the rebuild publishes the readout setting's page and the
row's report page at the address the client names (`public_report_url`), holding the
served report alone (the confirm summary, nothing per initialization).
"""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from service.submissions.records import SubmissionRepo
from tests.support.readout_service import SETTING, parquet_bytes
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs


@pytest.fixture()
def client(store, redis_conn, catalog, readout):
    return make_app(store, redis_conn, catalog, frozen_root=str(readout["frozen"])).test_client()


def _submit(client, readout, name: str, public: bool) -> tuple[str, str]:
    token = client.post("/api/v1/tokens", json={"name": "lab-r", "owner": "lab-r"},
                        headers=bearer(ADMIN_TOKEN)).json["token"]
    data = parquet_bytes(pd.read_parquet(readout["weak"]))
    form = {"file": (io.BytesIO(data), "weak.parquet"), "setting": SETTING, "name": name,
            "public": "true" if public else "false"}
    response = client.post("/api/v1/submissions", headers=bearer(token), data=form,
                           content_type="multipart/form-data")
    assert response.status_code == 202, response.json
    return response.json["id"], token


def test_a_public_readout_submission_is_published_with_its_served_report(client, readout, store, redis_conn,
                                                                          catalog):
    sid, token = _submit(client, readout, "weak features (v2)", public=True)
    run_jobs(store, redis_conn, catalog)
    page = client.get(f"/leaderboard/reports/{sid}.{SETTING}.html")
    assert page.status_code == 200
    assert b"weak features (v2) on door-readout-v1" in page.data and b"<svg" in page.data
    published = json.loads(client.get(f"/leaderboard/reports/{sid}.{SETTING}.json").data)
    served = client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token)).json
    assert published == served
    rep = published["representations"][0]
    assert rep["initializations"] == [] and rep["curves"] == []
    sealed = pd.read_parquet(readout["sealed"])
    text = page.data.decode()
    assert not [i for i in set(sealed["initialization"]) if f">{i}<" in text]
    setting = json.loads(client.get(f"/leaderboard/settings/{SETTING}.json").data)
    assert [row["row_id"] for row in setting["rows"]] == [f"{sid}.{SETTING}"]
    assert setting["rows"][0]["rank"] == 1
    assert setting["rows"][0]["summary"]["mae_controlled"]["mean"] == rep["summary"]["mae_controlled"]["mean"]
    index = client.get("/leaderboard/index.html").data.decode()
    assert f'href="settings/{SETTING}.html"' in index


def test_a_private_readout_submission_is_not_published(client, readout, store, redis_conn, catalog):
    sid, _ = _submit(client, readout, "private", public=False)
    run_jobs(store, redis_conn, catalog)
    assert SubmissionRepo(store).status(sid).state.value == "published"
    assert client.get(f"/leaderboard/reports/{sid}.{SETTING}.html").status_code == 404
    setting = json.loads(client.get(f"/leaderboard/settings/{SETTING}.json").data)
    assert setting["rows"] == []
