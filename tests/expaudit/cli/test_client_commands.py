"""The client commands against a real HTTP server of the app: a refusal of the service is one
line `expaudit COMMAND: error: ...`, a missing token names EXPAUDIT_TOKEN, `download` fetches
every download a setting offers, `run-log` shows a selector's output, and a server address
without a scheme is answered with the URL to give."""

from __future__ import annotations

import hashlib
import threading

import pytest
from werkzeug.serving import make_server

from expaudit.cli import main
from service.submissions import Manifest, SubmissionRepo, new_submission_id, utc_now
from tests.support.servers import ADMIN_TOKEN, bearer, make_app


@pytest.fixture()
def server(store, redis_conn, catalog, monkeypatch):
    """The app served over HTTP in a thread; the tokens of $EXPAUDIT_* are not inherited."""
    for name in ("EXPAUDIT_SERVER", "EXPAUDIT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    app = make_app(store, redis_conn, catalog)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    token = app.test_client().post("/api/v1/tokens", json={"name": "lab-c", "owner": "lab-c"},
                                   headers=bearer(ADMIN_TOKEN)).json
    yield f"http://127.0.0.1:{httpd.server_port}", token
    httpd.shutdown()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_a_refused_upload_is_one_line_naming_the_command(capsys, server, tmp_path):
    url, token = server
    bad = tmp_path / "bad.csv"
    bad.write_text("scene_id,experience_id,value\ns,e,1\n")
    status, _out, err = _run(capsys, "submit", str(bad), "--setting", "toy-k4", "--server", url,
                             "--token", token["token"])
    assert status == 1
    assert err.count("\n") == 1 and err.startswith("expaudit submit: error: HTTP 422 "), err
    assert "the file's columns: scene_id, experience_id, value" in err and "source: bad.csv" in err


def test_a_missing_token_names_expaudit_token(capsys, server, tmp_path):
    url, _token = server
    status, _out, err = _run(capsys, "submissions", "--server", url)
    assert status == 1 and err.startswith("expaudit submissions: error: HTTP 401"), err
    assert "set EXPAUDIT_TOKEN (or pass --token)" in err


def test_download_fetches_every_download_the_setting_offers(capsys, server, tmp_path, catalog):
    url, _token = server
    out_dir = tmp_path / "data"
    status, out, err = _run(capsys, "download", "toy-k4", "--out", str(out_dir), "--server", url)
    assert status == 0, err
    from service.catalog import downloads

    offered = [d.key for d in downloads.offered_downloads(catalog, "toy-k4")]
    names = sorted(p.name for p in out_dir.iterdir())
    assert len(names) == len(offered) >= 3 and all(n.startswith("toy-k4-") for n in names), names
    assert sorted(out.split()) == [str(out_dir / name) for name in names]
    status, _out, err = _run(capsys, "download", "toy-k4", "--what", "nosuch", "--server", url)
    assert status == 2 and "offers no download ['nosuch']" in err and "'outcomes'" in err


def test_run_log_shows_a_failed_selectors_output(capsys, server, store):
    url, token = server
    sid = new_submission_id()
    sha = hashlib.sha256(b"archive").hexdigest()
    repo = SubmissionRepo(store)
    repo.create(Manifest(submission_id=sid, owner=token["token_id"], owner_name="lab-c",
                         name="crash", settings=("toy-k4",), input_key=f"inputs/sha256/{sha}",
                         input_sha256=sha, input_format="tar.gz", filename="sel.tar.gz",
                         selection_only=False, created_at=utc_now(), kind="container",
                         selector_backend="local"))
    repo.write_selector_run(sid, {"status": "crashed", "reason": "exit code 1", "exit_code": 1,
                                  "stdout_tail": "reading /input\n",
                                  "stderr_tail": "Traceback ...\nKeyError: 'cubeA'\n",
                                  "wall_seconds": 0.4, "image_digest": None})
    status, out, err = _run(capsys, "run-log", sid, "--server", url, "--token", token["token"])
    assert status == 1, err
    assert f"{sid}  crashed  exit code 1" in out
    assert "--- stdout" in out and "reading /input" in out
    assert "--- stderr" in out and "KeyError: 'cubeA'" in out


def test_a_server_without_a_scheme_gets_the_url_to_give(capsys):
    status, _out, err = _run(capsys, "status", "sub-x", "--server", "127.0.0.1:18431")
    assert status == 2
    assert err == ("expaudit status: error: '127.0.0.1:18431' is not a server URL: it has no "
                   "scheme; give http://127.0.0.1:18431 or https://127.0.0.1:18431\n")
