"""Sealed settings: public scenes, no outcome downloads, reports without cells, a daily quota."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.errors import TooManyRequests
from service.sealed.quota import (QUOTA_KEY, claims_today, give_back_sealed_quota, sealed_settings,
                            take_sealed_quota)
from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs, scores_csv
from tests.support.submissions import report_keys, submit_scores

NOON = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture()
def app(store, redis_conn, catalog):
    return make_app(store, redis_conn, catalog, sealed_submissions_per_day=2)


@pytest.fixture()
def token(client):
    response = client.post("/api/v1/tokens", json={"name": "lab-s", "owner": "lab-s"}, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201
    return response.json["token"]


# ------------------------------------------------------------------ quota


def test_quota_counts_per_owner_and_day_and_refuses_past_the_limit(redis_conn, store):
    assert [take_sealed_quota(redis_conn, store, "tok-a", 2, NOON).count for _ in range(2)] == [1, 2]
    with pytest.raises(TooManyRequests, match=r"at most 2 submissions to sealed settings per "
                                              r"UTC day, for all the tokens of one owner "
                                              r"together; try again in 43200 s") as info:
        take_sealed_quota(redis_conn, store, "tok-a", 2, NOON)
    assert info.value.code == "sealed_quota" and info.value.extra["retry_after"] == 43200
    assert int(redis_conn.get(QUOTA_KEY.format(owner="tok-a", day="20260301"))) == 2
    assert claims_today(store, "tok-a", NOON) == 2
    assert take_sealed_quota(redis_conn, store, "tok-b", 2, NOON).count == 1  # another owner
    next_day = NOON.replace(day=2)
    claim = take_sealed_quota(redis_conn, store, "tok-a", 2, next_day)
    assert claim.count == 1
    give_back_sealed_quota(redis_conn, store, claim)
    assert int(redis_conn.get(QUOTA_KEY.format(owner="tok-a", day="20260302"))) == 0
    assert claims_today(store, "tok-a", next_day) == 0


def test_the_quota_survives_redis_losing_its_data(redis_conn, store):
    """Fault: Redis restarted empty (or flushed) mid-day. The store's claims still count."""
    for _ in range(2):
        take_sealed_quota(redis_conn, store, "tok-a", 2, NOON)
    redis_conn.flushall()
    with pytest.raises(TooManyRequests):
        take_sealed_quota(redis_conn, store, "tok-a", 2, NOON)
    assert int(redis_conn.get(QUOTA_KEY.format(owner="tok-a", day="20260301"))) == 2


def test_sealed_settings_are_picked_from_the_catalog(catalog):
    assert sealed_settings(catalog, ["toy-k4", "toy-sealed"]) == ["toy-sealed"]


def test_sealed_submissions_are_limited_per_day_but_public_ones_are_not(client, token, catalog):
    sealed = catalog.load_transfer("toy-sealed")
    for seed in (1, 2):
        assert submit_scores(client, token, scores_csv(sealed, seed=seed),
                             setting="toy-sealed").status_code == 202
    refused = submit_scores(client, token, scores_csv(sealed, seed=3), setting="toy-sealed")
    assert refused.status_code == 429 and refused.headers["Retry-After"].isdigit()
    error = refused.json["error"]
    assert error["code"] == "sealed_quota" and error["field"] == "setting"
    assert "at most 2 submissions to sealed settings" in error["message"]
    public = submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k4")),
                           setting="toy-k4")
    assert public.status_code == 202


def test_a_refused_upload_does_not_use_up_the_quota(client, token, catalog, redis_conn):
    bad = submit_scores(client, token, b"scene_id,experience_id,score\nnope,nope,1\n",
                        setting="toy-sealed")
    assert bad.status_code == 422
    assert not list(redis_conn.scan_iter("expaudit:sealed:*"))


# ---------------------------------------------------------- downloads, reports


def test_sealed_outcomes_are_never_downloadable_but_scenes_are(client):
    for fmt in ("parquet", "csv", "npz"):
        response = client.get(f"/api/v1/settings/toy-sealed/outcomes?format={fmt}")
        assert response.status_code == 403
        assert response.json["error"]["code"] == "sealed"
        assert "is sealed: its outcomes are never published" in response.json["error"]["message"]
    scenes = client.get("/api/v1/settings/toy-sealed/scenes?format=csv")
    assert scenes.status_code == 200 and scenes.data.startswith(b"scene_id,state_id")
    detail = client.get("/api/v1/settings/toy-sealed").json
    assert detail["sealed"] and set(detail["downloads"]) == {"scenes", "experiences"}


def test_a_sealed_report_has_the_audit_numbers_and_no_cells(client, token, catalog, store,
                                                            redis_conn):
    sealed = catalog.load_transfer("toy-sealed")
    sid = submit_scores(client, token, scores_csv(sealed), setting="toy-sealed").json["id"]
    run_jobs(store, redis_conn, catalog)
    report = client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token))
    assert report.status_code == 200
    document = report.json
    assert 0.0 <= document["reference"]["success_rule"] <= 1.0
    assert not {"outcomes", "outcome", "success", "transfer"} & report_keys(document)
    numbers = [v for v in _flat_values(document) if isinstance(v, list)]
    assert all(len(v) < sealed.outcomes[:, :, 0].size for v in numbers)


def _flat_values(document):
    if isinstance(document, dict):
        for value in document.values():
            yield value
            yield from _flat_values(value)
    elif isinstance(document, list):
        for value in document:
            yield from _flat_values(value)


def test_the_frozen_benchmark_seals_stack_hidden_with_scenes_and_no_outcomes():
    from benchmark_data.paths import query_set_dir
    from service.catalog.catalog import BenchmarkCatalog

    catalog = BenchmarkCatalog()
    summary = catalog.get_setting("stack-replay-k10-hidden")
    assert summary.sealed and summary.query_set == "stack-hidden" and summary.k == 10
    assert not catalog.get_setting("stack-replay-k10-a").sealed
    if not (query_set_dir("stack-hidden") / "scenes.parquet").is_file():
        pytest.skip("the stack-hidden query set is not generated here")
    assert catalog.fillable("stack-replay-k10-hidden")
    assert catalog.archive_path("stack-replay-k10-hidden", "images") is not None
