"""Attack: a hostile server answers `expaudit selector input` with an archive whose entries
climb out of the target directory."""

from __future__ import annotations

import io
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from expaudit_client import Client


def _archive(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture()
def hostile_server():
    """A real HTTP server that serves whatever archive the test sets."""
    served = {"body": b""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(len(served["body"])))
            self.end_headers()
            self.wfile.write(served["body"])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("name", ["input/../../escaped.txt", "inputs/../escaped.txt",
                                  "/input/escaped.txt", "input/../escaped.txt"])
def test_entries_outside_input_are_refused_and_nothing_is_written(tmp_path, hostile_server, name):
    url, served = hostile_server
    served["body"] = _archive({"input/ok.txt": b"fine", name: b"planted"})
    target = tmp_path / "a" / "dir"
    with pytest.raises(ValueError, match="unexpected entry"):
        Client(url).selector_input("stack-replay-k3-orig", target)
    planted = [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == b"planted"]
    assert planted == []


def test_a_well_formed_tree_is_unpacked(tmp_path, hostile_server):
    url, served = hostile_server
    served["body"] = _archive({"input/scenes.csv": b"scene_id\n", "input/library/e.txt": b"x"})
    target = Client(url).selector_input("stack-replay-k3-orig", tmp_path / "in")
    assert (target / "scenes.csv").read_bytes() == b"scene_id\n"
    assert (target / "library" / "e.txt").read_bytes() == b"x"
