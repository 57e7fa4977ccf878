"""`expaudit-client selector input | selector run | check`: an /input tree served by a real
HTTP server is unpacked, a selector runs on it as a plain process, and its scores are checked
against the tree's setting.json; a crash, a missing pair and a bad tree each end as they should."""

from __future__ import annotations

import io
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from expaudit_client.cli import main
from sandbox.demo import demo_input

SETTING = "demo"

SELECTOR = """
import csv, json, os
from pathlib import Path

root, out = Path(os.environ["EXPAUDIT_INPUT"]), Path(os.environ["EXPAUDIT_OUTPUT"])
setting = json.loads((root / "setting.json").read_text())
with open(out / "scores.csv", "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["scene_id", "experience_id", "score"])
    for scene_id in setting["scene_ids"]:
        for experience_id in setting["experience_ids"][:KEEP]:
            writer.writerow([scene_id, experience_id, "1.0"])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real HTTP server answering the selector-input route with a demo tree's archive."""
    tree = tmp_path_factory.mktemp("tree") / "input"
    demo_input(tree)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(tree, arcname="input")
    body = buffer.getvalue()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            found = self.path == f"/api/v1/settings/{SETTING}/selector-input"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/gzip" if found else "application/json")
            data = body if found else json.dumps({"error": {"code": "not_found",
                                                            "message": "no such setting"}}).encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{http.server_address[1]}"
    http.shutdown()
    http.server_close()


def _selector(folder, keep: str):
    folder.mkdir()
    (folder / "selector.py").write_text(SELECTOR.replace("KEEP", keep))
    return str(folder)


def test_input_then_local_run_then_check(server, tmp_path, capsys):
    tree = tmp_path / "input"
    assert main(["selector", "input", SETTING, str(tree), "--server", server]) == 0
    assert "the /input tree of demo" in capsys.readouterr().out
    assert json.loads((tree / "setting.json").read_text())["setting_id"] == SETTING

    ran = main(["selector", "run", _selector(tmp_path / "good", "None"), "--input", str(tree),
                "--output", str(tmp_path / "out")])
    result = json.loads(capsys.readouterr().out)
    assert (ran, result["status"], result["scores"]["complete"]) == (0, "ok", True), result
    assert main(["check", str(tmp_path / "out" / "scores.csv"), "--input", str(tree)]) == 0
    assert json.loads(capsys.readouterr().out)["complete"] is True

    ran = main(["selector", "run", _selector(tmp_path / "short", "-1"), "--input", str(tree),
                "--output", str(tmp_path / "out-short")])
    result = json.loads(capsys.readouterr().out)
    assert (ran, result["status"]) == (1, "output_invalid"), result
    assert "pairs missing" in result["reason"]


def test_a_crash_and_a_bad_tree_are_reported(server, tmp_path, capsys):
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "selector.py").write_text("raise SystemExit('no model here')\n")
    tree = tmp_path / "input"
    main(["selector", "input", SETTING, str(tree), "--server", server])
    capsys.readouterr()
    assert main(["selector", "run", str(crash), "--input", str(tree), "--output",
                 str(tmp_path / "out")]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["status"], result["exit_code"]) == ("crashed", 1)
    assert "no model here" in result["stderr_tail"]

    assert main(["selector", "run", str(crash), "--input", str(tmp_path), "--output",
                 str(tmp_path / "out2")]) == 2
    assert "expaudit-client selector run: error:" in capsys.readouterr().err
    assert main(["selector", "input", "nope", str(tmp_path / "x"), "--server", server]) == 1
    assert "HTTP 404 not_found: no such setting" in capsys.readouterr().err
