"""Withdrawing and renaming published submissions (owner, another user, the admin), the
published site following, and the best row per submitter beside all rows."""

from __future__ import annotations

import threading

from werkzeug.serving import make_server

from expaudit.cli import main
from tests.support.servers import ADMIN_TOKEN, bearer, run_jobs, scores_csv
from tests.support.submissions import submit_scores


def _token(client, name: str) -> str:
    response = client.post("/api/v1/tokens", json={"name": name, "owner": name},
                           headers=bearer(ADMIN_TOKEN))
    assert response.status_code == 201
    return response.json["token"]


def _published(client, token, catalog, store, redis_conn, name: str, seed: int = 1) -> str:
    body = scores_csv(catalog.load_transfer("toy-k4"), seed=seed)
    sid = submit_scores(client, token, body, setting="toy-k4", name=name, public="true").json["id"]
    run_jobs(store, redis_conn, catalog)
    assert client.get(f"/api/v1/submissions/{sid}").json["state"] == "published"
    return sid


def _board(client) -> dict:
    return {row["submission_id"]: row for row in client.get("/api/v1/leaderboard/toy-k4").json["rows"]}


def _page(client) -> str:
    return client.get("/leaderboard/settings/toy-k4.html").get_data(as_text=True)


def _error(response, status: int, code: str):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.json["error"]["code"] == code and response.json["error"]["field"] in (
        "submission_id", "name")
    return response.json["error"]


def test_the_owner_withdraws_and_renames_and_the_site_follows(client, catalog, store, redis_conn):
    owner = _token(client, "lab-a")
    sid = _published(client, owner, catalog, store, redis_conn, "scores")
    row = f"{sid}.toy-k4"
    assert _board(client)[row]["display_name"] == "scores" and "scores</a>" in _page(client)

    renamed = client.post(f"/api/v1/submissions/{sid}/rename", json={"name": "knn (k: 5)"},
                          headers=bearer(owner))
    assert renamed.status_code == 200 and renamed.json["name"] == "knn (k: 5)"
    assert client.get(f"/api/v1/submissions/{sid}").json["name"] == "knn (k: 5)"  # at once
    run_jobs(store, redis_conn, catalog)  # the rebuild the rename enqueued
    assert _board(client)[row]["display_name"] == "knn (k: 5)"
    page = _page(client)
    assert "knn (k: 5)</a>" in page and "scores</a>" not in page
    report = client.get(f"/leaderboard/reports/{row}.html").get_data(as_text=True)
    assert sid in report

    withdrawn = client.post(f"/api/v1/submissions/{sid}/withdraw", headers=bearer(owner))
    assert withdrawn.status_code == 200 and withdrawn.json["public"] is False
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 404  # private again, at once
    assert client.get(f"/api/v1/submissions/{sid}", headers=bearer(owner)).json["name"] == "knn (k: 5)"
    run_jobs(store, redis_conn, catalog)
    assert row not in _board(client) and sid not in _page(client)
    assert client.get(f"/leaderboard/reports/{row}.html").status_code == 404

    again = client.post(f"/api/v1/submissions/{sid}/publish", headers=bearer(owner))
    assert again.status_code == 200 and again.json["public"] is True
    run_jobs(store, redis_conn, catalog)
    assert _board(client)[row]["display_name"] == "knn (k: 5)"


def test_another_user_can_neither_withdraw_nor_rename(client, catalog, store, redis_conn):
    owner, stranger = _token(client, "lab-a"), _token(client, "lab-b")
    public = _published(client, owner, catalog, store, redis_conn, "public rule")
    private = submit_scores(client, owner, scores_csv(catalog.load_transfer("toy-k4")),
                            setting="toy-k4", name="private rule").json["id"]
    run_jobs(store, redis_conn, catalog)
    for action, body in (("withdraw", None), ("rename", {"name": "hijacked"})):
        # A public submission is visible to them: 403; a private one does not exist: 404.
        error = _error(client.post(f"/api/v1/submissions/{public}/{action}", json=body,
                                   headers=bearer(stranger)), 403, "forbidden")
        assert f"only the owner of submission '{public}' or the admin may {action} it" == error["message"]
        _error(client.post(f"/api/v1/submissions/{private}/{action}", json=body,
                           headers=bearer(stranger)), 404, "not_found")
        assert client.post(f"/api/v1/submissions/{public}/{action}", json=body).status_code == 401
    status = client.get(f"/api/v1/submissions/{public}").json
    assert status["public"] is True and status["name"] == "public rule"
    assert _board(client)[f"{public}.toy-k4"]["display_name"] == "public rule"
    _error(client.post(f"/api/v1/submissions/{public}/rename", json={"name": "a/b\\c"},
                       headers=bearer(owner)), 422, "invalid")
    _error(client.post(f"/api/v1/submissions/{public}/rename", json={}, headers=bearer(owner)),
           422, "invalid")


def test_the_admin_removes_and_renames_any_submission(client, catalog, store, redis_conn):
    owner = _token(client, "lab-a")
    sid = _published(client, owner, catalog, store, redis_conn, "spam")
    renamed = client.post(f"/api/v1/submissions/{sid}/rename", data={"name": "renamed by the admin"},
                          headers=bearer(ADMIN_TOKEN))
    assert renamed.status_code == 200 and renamed.json["name"] == "renamed by the admin"
    removed = client.post(f"/api/v1/submissions/{sid}/withdraw", headers=bearer(ADMIN_TOKEN))
    assert removed.status_code == 200 and removed.json["public"] is False
    run_jobs(store, redis_conn, catalog)
    assert f"{sid}.toy-k4" not in _board(client) and sid not in _page(client)
    assert client.get(f"/api/v1/submissions/{sid}", headers=bearer(owner)).json["public"] is False


def test_the_board_shows_each_submitters_best_beside_all_rows(client, catalog, store, redis_conn):
    lab_a, lab_b = _token(client, "lab-a"), _token(client, "lab-b")
    a_rows = [_published(client, lab_a, catalog, store, redis_conn, f"a{seed}", seed)
              for seed in (1, 2, 3)]
    b_row = _published(client, lab_b, catalog, store, redis_conn, "b", 4)
    document = client.get("/api/v1/leaderboard/toy-k4").json
    ranked = [r["submission_id"] for r in document["rows"]
              if r["role"] == "ranked" and r["kind"] == "submission"]
    assert len(ranked) == 4  # all rows stay
    best = document["best_per_submitter"]
    a_best = next(r for r in ranked if r.split(".")[0] in a_rows)  # lab-a's highest-placed
    assert sorted(best) == sorted([a_best, f"{b_row}.toy-k4"])
    assert best == [r for r in ranked if r in best]  # in ranking order
    assert {r["submitter"] for r in document["rows"] if r["kind"] == "submission"} == {"lab-a", "lab-b"}
    page = _page(client)
    assert 'id="best-only"' in page and "2 of the submissions' rows" in page
    for row in ranked:
        marked = f'data-submission="{row}"'
        tag = page[page.rindex("<tr ", 0, page.index(marked)):page.index(marked)]
        assert (" best" in tag) == (row in best), (row, tag)


def test_withdraw_and_rename_from_the_command_line(app, client, catalog, store, redis_conn,
                                                   capsys, monkeypatch):
    owner, stranger = _token(client, "lab-a"), _token(client, "lab-b")
    sid = _published(client, owner, catalog, store, redis_conn, "scores")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        monkeypatch.setenv("EXPAUDIT_SERVER", url)
        monkeypatch.setenv("EXPAUDIT_TOKEN", owner)
        assert main(["rename", sid, "my rule v2"]) == 0
        assert "name: my rule v2" in capsys.readouterr().out
        assert main(["withdraw", sid, "--token", stranger]) == 1
        err = capsys.readouterr().err
        assert err.startswith("expaudit withdraw: error:") and "403" in err and "forbidden" in err
        assert main(["withdraw", sid]) == 0
        assert "private" in capsys.readouterr().out
    finally:
        server.shutdown()
        thread.join(5)
    status = client.get(f"/api/v1/submissions/{sid}", headers=bearer(owner)).json
    assert status["name"] == "my rule v2" and status["public"] is False
