"""The REST API in process (Flask test client) on a real Redis and a local store."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from tests.support.servers import ADMIN_TOKEN, bearer, make_app, run_jobs, scores_csv, scores_rows
from tests.support.submissions import submit_scores


@pytest.fixture()
def token(client):
    response = client.post("/api/v1/tokens", json={"name": "lab-a", "owner": "lab-a"}, headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201
    return response.json["token"]


def _data(catalog, setting_id="toy-k4"):
    return catalog.load_transfer(setting_id)


def _error(response, status: int, code: str, field):
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.json["error"]
    assert error["code"] == code and error["field"] == field
    return error


# ------------------------------------------------------------------ settings

def test_settings_list_has_completeness(client):
    settings = {s["id"]: s for s in client.get("/api/v1/settings").json["settings"]}
    assert set(settings) == {"toy-k4", "toy-k3", "toy-sealed", "toy-partial"}
    assert settings["toy-k4"]["completeness"] == {"cells_done": 192, "cells_total": 192,
                                                  "complete": True, "share": 1.0,
                                                  "seeds_complete": [0, 1, 2]}
    partial = settings["toy-partial"]["completeness"]
    assert partial["complete"] is False and partial["cells_total"] - partial["cells_done"] == 9
    assert partial["seeds_complete"] == []  # the 3 missing scenes lack every seed
    assert "outcomes" not in settings["toy-sealed"]["downloads"]


def test_unknown_setting_is_404_naming_the_field(client):
    error = _error(client.get("/api/v1/settings/nope"), 404, "not_found", "setting_id")
    assert "unknown setting 'nope'" in error["message"]


# ----------------------------------------------------------------- downloads

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_outcome_download_roundtrips(client, catalog, fmt):
    response = client.get(f"/api/v1/settings/toy-k4/outcomes?format={fmt}")
    assert response.status_code == 200
    frame = (pd.read_csv(io.BytesIO(response.data)) if fmt == "csv"
             else pd.read_parquet(io.BytesIO(response.data)))
    data = _data(catalog)
    assert len(frame) == data.outcomes.size
    first = frame.iloc[0]
    assert first["experience_id"] == data.experience_ids[0]
    assert first["success"] == data.outcomes[0, 0, 0]


def test_npz_download_keeps_missing_cells(client, catalog):
    import numpy as np

    response = client.get("/api/v1/settings/toy-partial/outcomes?format=npz")
    with np.load(io.BytesIO(response.data)) as archive:
        assert (archive["outcomes"] == _data(catalog, "toy-partial").outcomes).all()
        assert (archive["outcomes"] == -1).sum() == 9


def test_scene_download_as_json(client, catalog):
    rows = client.get("/api/v1/settings/toy-k4/scenes?format=json").json
    assert [r["scene_id"] for r in rows] == list(_data(catalog).scenes.scene_ids)
    assert set(rows[0]) == {"scene_id", "state_id", "layout_level", "appearance_draw"}


def test_sealed_outcomes_are_refused(client):
    _error(client.get("/api/v1/settings/toy-sealed/outcomes"), 403, "sealed", "setting_id")


def test_bad_download_format_names_the_field(client):
    error = _error(client.get("/api/v1/settings/toy-k4/outcomes?format=xlsx"), 422, "invalid", "format")
    assert "got 'xlsx'" in error["message"]


def test_missing_archive_is_404(client):
    error = _error(client.get("/api/v1/settings/toy-k4/archives/images"), 404, "not_found", "kind")
    assert "has no images archive" in error["message"]


# --------------------------------------------------------------- submissions

def test_create_returns_202_with_status_url(client, token, catalog, store):
    response = submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4")
    assert response.status_code == 202
    body = response.json
    assert body["state"] == "queued" and body["progress"] == 0.0
    assert body["status_url"] == f"/api/v1/submissions/{body['id']}"
    manifest = json.loads(store.get_bytes(f"submissions/{body['id']}/manifest.json"))
    assert manifest["input_key"] == f"inputs/sha256/{manifest['input_sha256']}"
    assert store.get_bytes(manifest["input_key"]) == scores_csv(_data(catalog))


def test_raw_body_upload_with_query_fields(client, token, catalog):
    response = client.post("/api/v1/submissions?setting=toy-k4&filename=raw.csv&name=raw",
                           data=scores_csv(_data(catalog)), headers=bearer(token),
                           content_type="text/csv")
    assert response.status_code == 202 and response.json["name"] == "raw"


def test_json_and_parquet_uploads(client, token, catalog):
    rows = scores_rows(_data(catalog))
    as_json = submit_scores(client, token, json.dumps(rows).encode(), "s.json", setting="toy-k4")
    assert as_json.status_code == 202
    buffer = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buffer, index=False)
    as_parquet = submit_scores(client, token, buffer.getvalue(), "s.parquet", setting="toy-k4")
    assert as_parquet.status_code == 202


def test_many_settings_in_one_upload(client, token, catalog, store, redis_conn):
    body = (scores_csv(_data(catalog), setting_id="toy-k4")
            + b"".join(scores_csv(_data(catalog, "toy-k3"), setting_id="toy-k3").splitlines(True)[1:]))
    response = submit_scores(client, token, body)
    assert response.status_code == 202, response.json
    assert response.json["settings"] == ["toy-k3", "toy-k4"]
    run_jobs(store, redis_conn, catalog)
    status = client.get(response.json["status_url"], headers=bearer(token)).json
    assert status["state"] == "published" and sorted(status["reports"]) == ["toy-k3", "toy-k4"]
    report = client.get(f"{response.json['status_url']}/report?setting=toy-k3", headers=bearer(token))
    assert report.json["inputs"]["experience_ids"] == list(_data(catalog, "toy-k3").experience_ids)
    _error(client.get(f"{response.json['status_url']}/report", headers=bearer(token)),
           422, "invalid", "setting")


def test_bad_experience_names_file_line_field_value(client, token, catalog):
    body = scores_csv(_data(catalog)).replace(b"toy-k4-e002", b"toy-k4-e999", 1)
    error = _error(submit_scores(client, token, body, "mine.csv", setting="toy-k4"), 422,
                   "invalid_scores", "experience_id")
    assert error["source"] == "mine.csv" and error["value"] == "toy-k4-e999"
    assert error["line"] == 4  # header is line 1; the third data row names e002
    assert "mine.csv line 4" in error["message"]


def test_line_numbers_count_in_the_whole_file_with_many_settings(client, token, catalog):
    k4 = scores_csv(_data(catalog), setting_id="toy-k4")
    k3_rows = scores_csv(_data(catalog, "toy-k3"), setting_id="toy-k3").splitlines(True)[1:]
    k3_rows[5] = k3_rows[5].replace(b"toy-k3-s", b"bogus-s", 1)
    body = k4 + b"".join(k3_rows)
    error = _error(submit_scores(client, token, body), 422, "invalid_scores", "scene_id")
    assert error["line"] == len(k4.splitlines()) + 6


def test_nan_score_is_rejected_not_coerced(client, token, catalog):
    rows = scores_csv(_data(catalog)).decode().splitlines()
    head, first = rows[0], rows[1].rsplit(",", 1)[0] + ",nan"
    body = "\n".join([head, first, *rows[2:]]).encode()
    error = _error(submit_scores(client, token, body,
                                 setting="toy-k4"), 422, "invalid_scores", "score")
    assert error["line"] == 2 and error["value"] == "nan"


def test_unknown_setting_in_column_names_the_line(client, token, catalog):
    body = scores_csv(_data(catalog), setting_id="toy-k9")
    error = _error(submit_scores(client, token, body), 422, "invalid_scores", "setting_id")
    assert error["line"] == 2 and error["value"] == "toy-k9"


def test_no_setting_named(client, token, catalog):
    error = _error(submit_scores(client, token,
                                 scores_csv(_data(catalog))), 422, "invalid", "setting")
    assert "name exactly one setting" in error["message"]


def test_setting_field_disagreeing_with_column(client, token, catalog):
    body = scores_csv(_data(catalog), setting_id="toy-k4")
    error = _error(submit_scores(client, token, body, setting="toy-k3"), 422, "invalid", "setting")
    assert "setting_id column holds ['toy-k4']" in error["message"]


@pytest.mark.parametrize("body,filename,message", [
    (b"", "s.csv", "file is empty"),
    (b"not json", "s.json", "is not valid JSON"),
    (b"PAR1garbage", "s.parquet", "cannot be read as parquet"),
    (b'{"rows": 3}', "s.json", "non-empty list of row objects"),
])
def test_unreadable_files(client, token, body, filename, message):
    error = submit_scores(client, token, body, filename, setting="toy-k4")
    assert error.status_code == 422 and message in error.json["error"]["message"]


def _csv_lines(catalog) -> list[str]:
    return scores_csv(_data(catalog)).decode().splitlines()


def test_csv_rows_are_read_strictly_with_true_line_numbers(client, token, catalog):
    lines = _csv_lines(catalog)
    shifted = [lines[0]] + [f"junk,{line}" for line in lines[1:]]  # pandas would make 'junk' an index
    error = _error(submit_scores(client, token, "\n".join(shifted).encode(), setting="toy-k4"), 422,
                   "invalid_scores", None)
    assert error["line"] == 2 and "has 4 fields, the header has 3" in error["message"]
    blank = lines[:5] + [""] + lines[5:]
    error = _error(submit_scores(client, token, "\n".join(blank).encode(), setting="toy-k4"), 422,
                   "invalid_scores", None)
    assert error["line"] == 6 and "is a blank line" in error["message"]
    odd = lines[:2] + [lines[2].rsplit(",", 1)[0] + ",1_000"] + lines[3:]
    error = _error(submit_scores(client, token, "\n".join(odd).encode(), setting="toy-k4"), 422,
                   "invalid_scores", "score")
    assert error["line"] == 3 and error["value"] == "1_000" and "is not a number" in error["message"]


def test_json_values_are_reported_as_written(client, token, catalog):
    rows = scores_rows(_data(catalog))
    missing = [{k: v for k, v in rows[0].items() if k != "score"}, *rows[1:]]
    error = _error(submit_scores(client, token, json.dumps(missing).encode(), "s.json",
                                 setting="toy-k4"),
                   422, "invalid_scores", "score")
    assert error["line"] == 2 and "is empty" in error["message"]
    huge = json.dumps([{**rows[0], "score": 0}, *rows[1:]]).replace('"score": 0', '"score": 1' + "0" * 400, 1)
    error = _error(submit_scores(client, token, huge.encode(), "s.json", setting="toy-k4"), 422,
                   "invalid_scores", "score")
    assert error["line"] == 2 and "is not a finite number" in error["message"]
    nested = b"[" * 100_000 + b"]" * 100_000
    error = _error(submit_scores(client, token, nested, "s.json",
                                 setting="toy-k4"), 422, "invalid_scores", None)
    assert "nested too deeply" in error["message"]


def test_parquet_with_malformed_pandas_metadata_is_unreadable_not_a_crash(client, token, catalog):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(pd.DataFrame(scores_rows(_data(catalog))), preserve_index=False)
    pandas_meta = json.loads(table.schema.metadata[b"pandas"])
    table = table.replace_schema_metadata({b"pandas": json.dumps({**pandas_meta, "index_columns": ["nope"]})})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    error = _error(submit_scores(client, token, buffer.getvalue(), "s.parquet",
                                 setting="toy-k4"), 422,
                   "invalid_scores", None)
    assert "cannot be read as parquet" in error["message"]


def test_parquet_is_refused_from_its_footer_when_it_would_unpack_too_far(client, token, catalog, monkeypatch):
    import leaderboard.scores.limits

    buffer = io.BytesIO()
    pd.DataFrame(scores_rows(_data(catalog))).to_parquet(buffer, index=False)
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 10)
    error = _error(submit_scores(client, token, buffer.getvalue(), "s.parquet",
                                 setting="toy-k4"), 422,
                   "invalid_scores", None)
    assert "rows; at most 10 are read" in error["message"]
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 1_000_000)
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_UNPACKED_BYTES", 100)
    error = _error(submit_scores(client, token, buffer.getvalue(), "s.parquet",
                                 setting="toy-k4"), 422,
                   "invalid_scores", None)
    assert "bytes; at most 100 are read" in error["message"]


def test_unknown_format(client, token, catalog):
    error = _error(submit_scores(client, token, scores_csv(_data(catalog)), "s.txt",
                                 setting="toy-k4"),
                   422, "invalid", "format")
    assert "cannot tell the format of 's.txt'" in error["message"]


def test_bad_public_flag_and_name(client, token, catalog):
    body = scores_csv(_data(catalog))
    _error(submit_scores(client, token, body, setting="toy-k4",
                         public="maybe"), 422, "invalid", "public")
    _error(submit_scores(client, token, body, setting="toy-k4",
                         name="<script>"), 422, "invalid", "name")


def test_incomplete_setting_is_refused(client, token, catalog):
    body = scores_csv(_data(catalog, "toy-partial"))
    error = _error(submit_scores(client, token, body,
                                 setting="toy-partial"), 409, "setting_incomplete",
                   "setting")
    assert "9 outcome cells not executed" in error["message"]


def test_missing_file_part(client, token):
    response = client.post("/api/v1/submissions", data={"setting": "toy-k4"}, headers=bearer(token),
                           content_type="multipart/form-data")
    _error(response, 422, "invalid", "file")


def test_upload_over_the_size_limit_is_413(store, redis_conn, catalog):
    client = make_app(store, redis_conn, catalog, max_upload_bytes=1000).test_client()
    token = client.post("/api/v1/tokens", json={"name": "x", "owner": "x"}, headers=bearer(ADMIN_TOKEN)).json["token"]
    response = submit_scores(client, token, scores_csv(catalog.load_transfer("toy-k4")),
                             setting="toy-k4")
    _error(response, 413, "too_large", "body")


def test_a_field_given_twice_or_in_the_wrong_place_is_an_error(client, token, catalog):
    body = scores_csv(_data(catalog))
    twice = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                        data={"file": (io.BytesIO(body), "s.csv"), "setting": ["toy-k3", "toy-k4"]})
    assert "given more than once" in _error(twice, 422, "invalid", "setting")["message"]
    two_files = client.post("/api/v1/submissions", headers=bearer(token), content_type="multipart/form-data",
                            data={"file": [(io.BytesIO(body), "a.csv"), (io.BytesIO(body), "b.csv")],
                                  "setting": "toy-k4"})
    _error(two_files, 422, "invalid", "file")
    in_query = client.post("/api/v1/submissions?public=true", headers=bearer(token),
                           content_type="multipart/form-data",
                           data={"file": (io.BytesIO(body), "s.csv"), "setting": "toy-k4"})
    assert "as a form field" in _error(in_query, 422, "invalid", "public")["message"]
    raw_twice = client.post("/api/v1/submissions?setting=toy-k4&setting=toy-k3&filename=s.csv",
                            data=body, headers=bearer(token), content_type="text/csv")
    _error(raw_twice, 422, "invalid", "setting")


def test_an_unknown_setting_field_is_blamed_on_the_field(client, token, catalog):
    error = _error(submit_scores(client, token, scores_csv(_data(catalog)), setting="nope"), 404,
                   "not_found", "setting")
    assert "unknown setting 'nope'" in error["message"]


def test_names_are_checked_whole_and_defaults_made_valid(client, token, catalog):
    body = scores_csv(_data(catalog))
    _error(submit_scores(client, token, body, setting="toy-k4",
                         name="abc\n"), 422, "invalid", "name")
    _error(submit_scores(client, token, body, setting="toy-k4", name="   "), 422, "invalid", "name")
    derived = submit_scores(client, token, body, "scores#1.csv", setting="toy-k4")
    assert derived.status_code == 202 and derived.json["name"] == "scores-1"
    _error(client.get(f"/api/v1/submissions/{derived.json['id']}%0A", headers=bearer(token)),
           404, "not_found", "submission_id")


def test_an_idempotency_key_reused_for_another_file_name_conflicts(client, token, catalog):
    body = scores_csv(_data(catalog))
    headers = {**bearer(token), "Idempotency-Key": "k-name"}
    for filename, status in (("first.csv", 202), ("second.csv", 409)):
        response = client.post("/api/v1/submissions", headers=headers, content_type="multipart/form-data",
                               data={"file": (io.BytesIO(body), filename), "setting": "toy-k4"})
        assert response.status_code == status, response.json


def test_idempotency_key_replays_and_conflicts(client, token, catalog):
    body = scores_csv(_data(catalog))
    headers = {**bearer(token), "Idempotency-Key": "k-1"}
    first = client.post("/api/v1/submissions", data={"file": (io.BytesIO(body), "s.csv"),
                                                     "setting": "toy-k4"},
                        headers=headers, content_type="multipart/form-data")
    second = client.post("/api/v1/submissions", data={"file": (io.BytesIO(body), "s.csv"),
                                                      "setting": "toy-k4"},
                         headers=headers, content_type="multipart/form-data")
    assert first.status_code == second.status_code == 202
    assert first.json["id"] == second.json["id"]
    assert second.headers["Idempotent-Replayed"] == "true"
    other = client.post("/api/v1/submissions", data={"file": (io.BytesIO(body), "s.csv"),
                                                     "setting": "toy-k3"},
                        headers=headers, content_type="multipart/form-data")
    error = _error(other, 409, "conflict", "Idempotency-Key")
    assert "different request body" in error["message"]
    listed = client.get("/api/v1/submissions", headers=bearer(token)).json["submissions"]
    assert len(listed) == 1


def test_report_before_the_audit_is_409(client, token, catalog):
    sid = submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4").json["id"]
    error = _error(client.get(f"/api/v1/submissions/{sid}/report", headers=bearer(token)), 409,
                   "not_ready", "setting")
    assert "state queued" in error["message"]


def test_bad_report_format_and_list_limit(client, token, catalog):
    sid = submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4").json["id"]
    _error(client.get(f"/api/v1/submissions/{sid}/report?format=pdf", headers=bearer(token)), 422,
           "invalid", "format")
    _error(client.get(f"/api/v1/submissions/{sid}/report?setting=toy-k3", headers=bearer(token)), 404,
           "not_found", "setting")
    _error(client.get("/api/v1/submissions?limit=0", headers=bearer(token)), 422, "invalid", "limit")
    _error(client.get("/api/v1/submissions?limit=x", headers=bearer(token)), 422, "invalid", "limit")


def test_full_cycle_in_process(client, token, catalog, store, redis_conn):
    sid = submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4",
                        name="knn").json["id"]
    run_jobs(store, redis_conn, catalog)
    status = client.get(f"/api/v1/submissions/{sid}", headers=bearer(token)).json
    assert status["state"] == "published" and status["progress"] == 1.0 and status["attempts"] == 1
    html = client.get(status["report_urls"]["toy-k4"]["html"], headers=bearer(token))
    assert html.status_code == 200 and html.mimetype == "text/html"
    # Private until the owner publishes: not on the board, not visible to others.
    board = client.get("/api/v1/leaderboard/toy-k4").json
    assert all(not r["submission_id"].startswith(sid) for r in board["rows"])
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 404
    published = client.post(f"/api/v1/submissions/{sid}/publish", headers=bearer(token))
    assert published.status_code == 200 and published.json["public"] is True
    run_jobs(store, redis_conn, catalog)
    board = client.get("/api/v1/leaderboard/toy-k4").json
    assert f"{sid}.toy-k4" in [r["submission_id"] for r in board["rows"]]
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 200  # public now


def test_status_of_a_final_submission_is_answered_without_the_store(client, token, catalog, store,
                                                                    redis_conn):
    from service.submissions.records import State, Status, SubmissionRepo

    sid = submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4").json["id"]
    url = f"/api/v1/submissions/{sid}"
    repo = SubmissionRepo(store)
    repo.write_status(sid, Status(State.RUNNING, 0.05, rollouts={"done": 1, "total": 4,
                                                                 "chunks_pending": 1, "runners": 1}))
    assert client.get(url, headers=bearer(token)).json["rollouts"]["done"] == 1
    repo.write_status(sid, Status(State.RUNNING, 0.05, rollouts={"done": 3, "total": 4,
                                                                 "chunks_pending": 1, "runners": 1}))
    assert client.get(url, headers=bearer(token)).json["rollouts"]["done"] == 3  # not final: read
    run_jobs(store, redis_conn, catalog)
    first = client.get(url, headers=bearer(token))
    assert first.json["state"] == "published" and first.json["public"] is False
    record = store.root / repo.status_key(sid)
    saved = record.read_bytes()
    record.unlink()  # a final record is never rewritten
    again = client.get(url, headers=bearer(token))
    assert again.status_code == 200 and again.get_data() == first.get_data()
    assert again.mimetype == "application/json"
    assert client.get(url).status_code == 404  # visibility is still checked per request
    # Making it public is the one change left; the document then is read (and remembered) anew.
    record.write_bytes(saved)
    assert client.post(f"{url}/publish", headers=bearer(token)).json["public"] is True
    public = client.get(url)
    assert public.status_code == 200 and public.json["public"] is True
    assert public.json["state"] == "published"


def test_site_paths_no_object_can_have_are_404(client, store):
    store.put_bytes("leaderboard/index.html", b"<html></html>")  # the site folder exists
    error = _error(client.get("/leaderboard/" + "a" * 300), 404, "not_found", "path")
    assert len(error["message"]) < 300  # the path is shortened in the message


def test_leaderboard_not_published_yet_is_404(client):
    error = _error(client.get("/api/v1/leaderboard"), 404, "not_found", "path")
    assert "not published" in error["message"]


def test_static_site_and_root_redirect(client, store):
    store.put_bytes("leaderboard/index.html", b"<html>board</html>", "text/html")
    root = client.get("/")
    assert root.status_code == 302 and root.headers["Location"].endswith("/leaderboard/index.html")
    page = client.get("/leaderboard/index.html")
    assert page.status_code == 200 and page.data == b"<html>board</html>"
    assert page.mimetype == "text/html"
    assert client.get("/leaderboard/../submissions/x").status_code == 404


# ---------------------------------------------------------------- operations

def test_healthz_and_metrics(client, token, catalog, redis_conn):
    from rq import Queue

    assert client.get("/healthz").json == {"status": "ok", "store": "ok", "redis": "ok"}
    submit_scores(client, token, scores_csv(_data(catalog)), setting="toy-k4")
    rollouts = Queue("rollouts", connection=redis_conn)
    for n in range(2):
        rollouts.enqueue("service.runner.rollout_runner.rollout_chunk_job", {"n": n})
    text = client.get("/metrics").get_data(as_text=True)
    assert 'expaudit_submissions_total{outcome="accepted"} 1.0' in text
    assert 'expaudit_queue_length{queue="audit"} 1.0' in text
    assert 'expaudit_queue_length{queue="publish"} 0.0' in text
    assert 'expaudit_queue_length{queue="rollouts"} 2.0' in text
    assert 'endpoint="submissions.create_submission"' in text


def test_healthz_reports_redis_down(store, catalog):
    import redis

    from tests.support.servers import free_port

    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.5)
    client = make_app(store, dead, catalog).test_client()
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json["redis"].startswith("unavailable")


def test_method_not_allowed_is_json(client):
    _error(client.delete("/api/v1/settings"), 405, "method_not_allowed", None)


def test_docs_page_is_self_contained(client):
    page = client.get("/api/v1/docs").get_data(as_text=True)
    assert "/api/v1/submissions" in page and "Needs a bearer token" in page
    assert "<script" not in page and "src=" not in page and "<link" not in page


@pytest.mark.parametrize("sid", ["%C2%84", "sub-..", "sub-20260101000000-zzzzzzzzzzzz"])
def test_malformed_submission_ids_are_404_not_500(client, token, sid):
    _error(client.get(f"/api/v1/submissions/{sid}", headers=bearer(token)), 404, "not_found",
           "submission_id")


def test_unexpected_errors_are_json_500(store, redis_conn, catalog):
    class BrokenCatalog(type(catalog)):
        def list_settings(self):
            raise RuntimeError("catalog file corrupt")

    app = make_app(store, redis_conn, BrokenCatalog({}))
    response = app.test_client().get("/api/v1/settings")
    assert response.status_code == 500 and response.json["error"]["code"] == "internal_error"


def test_archive_download_where_the_data_has_one(store, redis_conn, tmp_path):
    from service.catalog.catalog import StaticCatalog
    from tests.support.servers import synthetic_setting

    summary, data = synthetic_setting("arch-k3", k=3)
    archive = tmp_path / "images.tar"
    archive.write_bytes(b"tar bytes")
    catalog = StaticCatalog({summary: data}, archives={("arch-k3", "images"): archive})
    client = make_app(store, redis_conn, catalog).test_client()
    response = client.get("/api/v1/settings/arch-k3/archives/images")
    assert response.status_code == 200 and response.data == b"tar bytes"
    assert "images.tar" in response.headers["Content-Disposition"]
    _error(client.get("/api/v1/settings/arch-k3/archives/library"), 404, "not_found", "kind")
    _error(client.get("/api/v1/settings/arch-k3/archives/videos"), 404, "not_found", "kind")
