"""End to end: gunicorn, an RQ worker process, redis-server and SeaweedFS S3, over HTTP."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from tests.support.servers import (ADMIN_TOKEN, ServiceStack, scores_csv, synthetic_setting,
                                   write_catalog)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server, seaweed_server):
    directory = tmp_path_factory.mktemp("stack")
    setting = synthetic_setting("e2e-k5", k=5, n_states=8, draws=2, seeds=3)
    catalog = write_catalog(directory / "catalog", setting)
    bucket = f"e2e-{uuid.uuid4().hex[:10]}"
    seaweed_server.make_bucket(bucket)
    stack = ServiceStack(directory, redis_server, catalog, seaweed_server, bucket)
    stack.start_web()
    stack.start_worker()
    yield stack, setting
    stack.stop()


def _poll(url: str, headers: dict, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        status = requests.get(url, headers=headers, timeout=10).json()
        if not seen or seen[-1] != status["state"]:
            seen.append(status["state"])
        if status["state"] in ("published", "failed"):
            status["seen_states"] = seen
            return status
        time.sleep(0.1)
    raise AssertionError(f"still {seen} after {timeout} s")


def test_submit_poll_report_and_leaderboard(stack):
    stack, (summary, data) = stack
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    created = requests.post(f"{stack.url}/api/v1/tokens", json={"name": "e2e-lab", "owner": "e2e-lab"}, headers=admin,
                            timeout=10)
    assert created.status_code == 201, created.text
    auth = {"Authorization": f"Bearer {created.json()['token']}"}

    response = requests.post(
        f"{stack.url}/api/v1/submissions", headers={**auth, "Idempotency-Key": "e2e-1"},
        files={"file": ("nearest.csv", scores_csv(data), "text/csv")},
        data={"setting": summary.id, "name": "nearest neighbour", "public": "true"}, timeout=30)
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    assert response.headers["Location"] == f"/api/v1/submissions/{sid}"

    final = _poll(f"{stack.url}/api/v1/submissions/{sid}", auth)
    assert final["state"] == "published", (final, stack.logs())
    assert final["progress"] == 1.0 and final["fault"] is None
    assert final["seen_states"][-1] == "published"

    report = requests.get(f"{stack.url}{final['report_urls'][summary.id]['json']}", headers=auth,
                          timeout=10)
    assert report.status_code == 200
    assert report.json()["inputs"]["experience_ids"] == list(data.experience_ids)
    page = requests.get(f"{stack.url}{final['report_urls'][summary.id]['html']}", headers=auth,
                        timeout=10)
    assert page.status_code == 200 and "<svg" in page.text

    board = requests.get(f"{stack.url}/api/v1/leaderboard/{summary.id}", timeout=10).json()
    row_ids = [row["submission_id"] for row in board["rows"]]
    assert f"{sid}.{summary.id}" in row_ids
    assert any(r.startswith("baseline-oracle") for r in row_ids)
    html = requests.get(f"{stack.url}/leaderboard/settings/{summary.id}.html", timeout=10)
    assert html.status_code == 200 and "nearest neighbour" in html.text

    # The same Idempotency-Key and body gives the same submission, not a new one.
    again = requests.post(
        f"{stack.url}/api/v1/submissions", headers={**auth, "Idempotency-Key": "e2e-1"},
        files={"file": ("nearest.csv", scores_csv(data), "text/csv")},
        data={"setting": summary.id, "name": "nearest neighbour", "public": "true"}, timeout=30)
    assert again.status_code == 202 and again.json()["id"] == sid
    assert again.headers["Idempotent-Replayed"] == "true"


def test_download_redirects_to_a_presigned_url(stack):
    stack, (summary, data) = stack
    response = requests.get(f"{stack.url}/api/v1/settings/{summary.id}/outcomes",
                            params={"format": "csv"}, allow_redirects=False, timeout=30)
    assert response.status_code == 302
    location = response.headers["Location"]
    assert "X-Amz-Signature=" in location
    body = requests.get(location, timeout=10)
    assert body.status_code == 200
    lines = body.text.strip().splitlines()
    assert lines[0] == "experience_id,scene_id,seed,success"
    assert len(lines) - 1 == data.outcomes.size
    tampered = location.replace("outcomes.csv", "scenes.csv")
    assert requests.get(tampered, timeout=10).status_code == 403


def test_cli_submit_wait_status_download(stack, tmp_path):
    stack, (summary, data) = stack
    admin_env = {**stack.env(), "EXPAUDIT_SERVER": stack.url, "EXPAUDIT_TOKEN": ADMIN_TOKEN}
    created = stack.run_cli("token", "create", "--name", "cli-user", "--owner", "cli-user", env=admin_env)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    env = {**stack.env(), "EXPAUDIT_SERVER": stack.url, "EXPAUDIT_TOKEN": token}
    scores = tmp_path / "scores.csv"
    scores.write_bytes(scores_csv(data, seed=7))
    submitted = stack.run_cli("submit", str(scores), "--setting", summary.id, "--wait", env=env)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "published" in submitted.stdout and "100.0%" in submitted.stdout
    sid = submitted.stdout.split()[0]
    status = stack.run_cli("status", sid, env=env)
    assert status.returncode == 0 and "published" in status.stdout
    download = stack.run_cli("download", summary.id, "--what", "outcomes", "--format", "npz",
                             "--out", str(tmp_path), env=env)
    assert download.returncode == 0, download.stderr
    import numpy as np

    with np.load(download.stdout.strip()) as archive:
        assert archive["outcomes"].shape == data.outcomes.shape
        assert (archive["outcomes"] == data.outcomes).all()
    bad = tmp_path / "bad.csv"
    bad.write_text("scene_id,experience_id,score\nnope,x,1\n")
    refused = stack.run_cli("submit", str(bad), "--setting", summary.id, env=env)
    assert refused.returncode == 1
    assert "field 'scene_id'" in refused.stderr and "line: 2" in refused.stderr
