"""A lab-sized setting through the service and the CLI: derived upload limits, chunked audit paths.

A real lab matrix (K = 1,000 x 2,000 scenes: a 2,000,000-row scores file)
is too large for a test; here the fixed floors are lowered instead, so that
a small setting is "larger than the floors" and the limits must be derived
from it, and the metrics' blocks are forced tiny
(`leaderboard.metrics.chunking.CHUNK_ELEMENTS`), so that the audit walks
the same chunked paths. Real Redis, real HTTP handling (Flask test client),
the real worker loop (rq SimpleWorker) and the real CLI.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

import leaderboard.scores.limits
import service.submissions.limits
from expaudit.cli import main
from leaderboard.audit import run_audit
from leaderboard.metrics import chunking
from service.catalog.catalog import StaticCatalog
from leaderboard.scores.limits import MULTIPART_BYTES, full_file_needs
from tests.support.servers import (ADMIN_TOKEN, bearer, make_app, run_jobs, scores_rows,
                                   synthetic_setting)
from tests.support.submissions import submit_scores

LAB_ID = "lab-k60"


@pytest.fixture()
def lab():
    """A K = 60 setting (every diagnostic applies) of 12 states x 5 draws, 3 seeds."""
    return synthetic_setting(LAB_ID, k=60, n_states=12, draws=5, seed=11)


@pytest.fixture()
def low_floors(monkeypatch):
    """Fixed limits far below what the lab setting needs: 100 rows, 2,000 bytes."""
    monkeypatch.setattr(leaderboard.scores.limits, "FLOOR_ROWS", 100)
    monkeypatch.setattr(service.submissions.limits, "FLOOR_BODY_BYTES", 2000)
    monkeypatch.setattr(leaderboard.scores.limits, "FLOOR_DECODED_BYTES", 2000)
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 100)


@pytest.fixture()
def client(store, redis_conn, lab, low_floors):
    summary, data = lab
    app = make_app(store, redis_conn, StaticCatalog({summary: data}), max_upload_bytes=2000)
    client = app.test_client()
    client.catalog = app.extensions["expaudit"].catalog
    response = client.post("/api/v1/tokens", json={"name": "lab", "owner": "lab"}, headers=bearer(ADMIN_TOKEN))
    client.token = response.json["token"]
    return client


def test_full_file_needs_cover_csv_and_json_with_long_ids():
    experiences = [f"experiment-é-{i:04d}" for i in range(7)]
    scenes = [f"scene, with a comma {j}" for j in range(9)]
    need = full_file_needs("a-lab-setting", experiences, scenes)
    rows = [{"setting_id": "a-lab-setting", "scene_id": s, "experience_id": e, "score": -2.2250738585072014e-308}
            for s in scenes for e in experiences]
    as_json = json.dumps(rows).encode()
    as_csv = pd.DataFrame(rows).to_csv(index=False, lineterminator="\r\n").encode()
    assert need.rows == 63
    assert max(len(as_json), len(as_csv)) <= need.body_bytes - MULTIPART_BYTES


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_full_file_of_a_setting_over_the_fixed_limits_is_accepted(client, lab, fmt):
    """3,600 rows and 250 KB (JSON) against limits of 100 rows and 2,000 bytes: the limits rise."""
    rows = scores_rows(lab[1])
    if fmt == "csv":
        body = pd.DataFrame(rows).to_csv(index=False).encode()
    elif fmt == "json":
        body = json.dumps(rows).encode()
    else:
        buffer = io.BytesIO()
        pd.DataFrame(rows).to_parquet(buffer, index=False)
        body = buffer.getvalue()
    assert len(body) > 2000 and len(rows) > 100
    response = submit_scores(client, client.token, body, f"scores.{fmt}", setting=LAB_ID)
    assert response.status_code == 202, response.get_data(as_text=True)


def test_more_rows_than_the_largest_setting_are_refused_before_parsing(client, lab):
    """Twice the rows a full file needs, in tiny rows within the body limit: refused from the
    line count (LF or bare CR), the object count or the Parquet footer, before parsing."""
    pairs = 60 * 60
    n_rows = 2 * pairs
    header = b"scene_id,experience_id,score"
    for body, name in (
        (header + b"\n" + b"a,b,1\n" * n_rows, "s.csv"),
        (header + b"\r" + b"a,b,1\r" * n_rows, "s.csv"),
        (("[" + ",".join(["{}"] * n_rows) + "]").encode(), "s.json"),
    ):
        response = submit_scores(client, client.token, body, name, setting=LAB_ID)
        assert response.status_code == 422, response.get_data(as_text=True)
        assert response.json["error"]["message"].endswith(
            f"has more than {pairs} rows; at most {pairs} are read")
    buffer = io.BytesIO()
    pd.DataFrame({"scene_id": ["a"] * n_rows, "experience_id": ["b"] * n_rows,
                  "score": [1.0] * n_rows}).to_parquet(buffer, index=False)
    response = submit_scores(client, client.token, buffer.getvalue(), "s.parquet", setting=LAB_ID)
    assert response.status_code == 422
    assert f"has {n_rows} rows; at most {pairs} are read" in response.json["error"]["message"]


def test_a_body_over_the_derived_limit_is_413(client, lab):
    need = full_file_needs(LAB_ID, lab[1].experience_ids, lab[1].scenes.scene_ids)
    response = client.post("/api/v1/submissions", data=b"x" * (need.body_bytes + 1), headers=bearer(client.token),
                           content_type="multipart/form-data; boundary=b")
    assert response.status_code == 413
    assert response.json["error"]["field"] == "body"


def test_a_directory_catalog_is_sized_from_its_ids_without_reading_its_outcomes(tmp_path, lab, low_floors):
    from service.catalog.catalog import DirectoryCatalog, export_setting
    from service.submissions.limits import catalog_limits

    summary, data = lab
    directory = export_setting(tmp_path, summary, data)
    (directory / "outcomes.csv").unlink()  # sizing must not need it
    limits = catalog_limits(DirectoryCatalog(tmp_path))
    assert limits == full_file_needs(LAB_ID, data.experience_ids, data.scenes.scene_ids)


def test_service_audit_in_tiny_blocks_equals_the_direct_audit(client, lab, store, redis_conn,
                                                              monkeypatch):
    summary, data = lab
    rows = scores_rows(data)
    response = submit_scores(client, client.token,
                             pd.DataFrame(rows).to_csv(index=False).encode(), "scores.csv", setting=LAB_ID)
    assert response.status_code == 202, response.get_data(as_text=True)
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 7)
    run_jobs(store, redis_conn, client.catalog)
    report = client.get(f"{response.json['status_url']}/report", headers=bearer(client.token))
    assert report.status_code == 200, report.get_data(as_text=True)
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    scores = np.zeros(data.outcomes.shape[:2])
    index = {(r["experience_id"], r["scene_id"]): r["score"] for r in rows}
    for i, e in enumerate(data.experience_ids):
        for q, s in enumerate(data.scenes.scene_ids):
            scores[i, q] = index[(e, s)]
    direct = run_audit(data, scores, n_shuffles=100, n_bootstrap=100)
    assert direct.diagnostics.random_sublibraries.share_exceeding_oracle is not None
    served = report.json
    for key in ("reference", "concentration", "gap", "intervals", "ranking", "diagnostics"):
        assert served[key] == direct.to_dict()[key], key


def test_cli_audit_in_tiny_blocks_equals_default_blocks(tmp_path, lab, monkeypatch, capsys):
    from service.catalog.catalog import export_setting

    summary, data = lab
    directory = export_setting(tmp_path, summary, data)
    pd.DataFrame(scores_rows(data)).to_csv(tmp_path / "scores.csv", index=False)
    args = ["audit", "--experiences", str(directory / "experiences.csv"), "--outcomes",
            str(directory / "outcomes.csv"), "--scenes", str(directory / "scenes.csv"),
            "--scores", str(tmp_path / "scores.csv"), "--shuffles", "300", "--bootstrap", "300"]
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 7)
    assert main(args + ["--json", str(tmp_path / "tiny.json")]) == 0
    monkeypatch.setattr(chunking, "CHUNK_ELEMENTS", 1 << 20)
    assert main(args + ["--json", str(tmp_path / "default.json")]) == 0
    tiny = json.loads((tmp_path / "tiny.json").read_text())
    assert tiny == json.loads((tmp_path / "default.json").read_text())
    assert tiny["diagnostics"]["random_sublibraries"]["share_exceeding_oracle"] is not None
    assert capsys.readouterr().err == ""
