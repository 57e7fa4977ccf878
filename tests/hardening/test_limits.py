"""Upload limits: the JSON row pre-count, sizing the benchmark without its outcomes, and a body
limit that rises once a catalog unreadable at start can be read."""

from __future__ import annotations

import io
import json

import pytest

import leaderboard.scores.limits
import service.submissions.limits
from leaderboard.errors import InputError
from leaderboard.scores.limits import count_rows_upper_bound, full_file_needs
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, scores_rows, synthetic_setting


@pytest.mark.parametrize("wrapped", [False, True])
def test_the_json_pre_count_counts_every_row_object(wrapped):
    rows = [{"scene_id": "s", "experience_id": "e", "score": 1}] * 4
    body = json.dumps({"rows": rows} if wrapped else rows).encode()
    assert count_rows_upper_bound(b" \n" + body, "json") == 4


def test_a_json_list_one_row_over_the_limit_is_refused_before_parsing(monkeypatch):
    from leaderboard.scores import read_frame

    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 3)
    row = {"scene_id": "s", "experience_id": "e", "score": 1}
    with pytest.raises(InputError, match="has more than 3 rows; at most 3 are read"):
        read_frame(json.dumps([row] * 4).encode(), "json", "s.json")
    assert len(read_frame(json.dumps({"rows": [row] * 3}).encode(), "json", "s.json")) == 3


def test_the_benchmark_is_sized_from_its_ids_without_loading_a_tensor(monkeypatch):
    from service.catalog.catalog import BenchmarkCatalog, DataUnavailable

    catalog = BenchmarkCatalog()
    loaded = {}
    for summary in catalog.list_settings():
        try:
            data = catalog.load_transfer(summary.id)
        except DataUnavailable:
            continue
        loaded[summary.id] = (tuple(data.experience_ids), tuple(data.scenes.scene_ids))
    if not loaded:
        pytest.skip("frozen data not built")

    def no_tensor(*args):
        raise AssertionError("an outcome tensor was loaded to size the uploads")

    monkeypatch.setattr("service.catalog.catalog._load_frozen", no_tensor)
    for setting_id, ids in loaded.items():
        assert BenchmarkCatalog().pair_ids(setting_id) == ids


def test_the_body_limit_rises_once_a_catalog_unreadable_at_start_can_be_read(
        tmp_path, store, redis_conn, monkeypatch):
    """The catalog's directory does not exist when the app starts (a volume not yet mounted):
    the configured 2,000 bytes hold; once the setting is there, its full file is accepted."""
    from service.catalog.catalog import DirectoryCatalog, export_setting

    monkeypatch.setattr(leaderboard.scores.limits, "FLOOR_ROWS", 10)
    monkeypatch.setattr(service.submissions.limits, "FLOOR_BODY_BYTES", 2000)
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 10)
    summary, data = synthetic_setting("late-k4", k=4, n_states=8, draws=2)
    root = tmp_path / "catalog"
    client = make_app(store, redis_conn, DirectoryCatalog(root), max_upload_bytes=2000).test_client()
    token = client.post("/api/v1/tokens", json={"name": "lab", "owner": "lab"}, headers=bearer(ADMIN_TOKEN)).json["token"]
    body = json.dumps(scores_rows(data)).encode()
    assert 2000 < len(body) < full_file_needs(summary.id, data.experience_ids,
                                              data.scenes.scene_ids).body_bytes

    def submit():
        return client.post("/api/v1/submissions", headers=bearer(token),
                           content_type="multipart/form-data",
                           data={"file": (io.BytesIO(body), "s.json"),
                                 "setting": summary.id})

    assert submit().status_code == 413  # unreadable: the configured limit holds
    root.mkdir()
    export_setting(root, summary, data)
    response = submit()
    assert response.status_code == 202, response.get_data(as_text=True)
