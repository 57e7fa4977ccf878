"""The client checks a scores file against the server's upload limit before sending it: an
oversized file is refused naming the file, its size and the limit, and nothing is posted."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from expaudit_client import Client, UploadTooLarge

LIMIT = 1000


@pytest.fixture()
def server():
    """A real HTTP server with the limits route; it records every POST it is sent."""
    posts = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = json.dumps({"max_upload_bytes": LIMIT}).encode()
            self.send_response(200 if self.path == "/api/v1/limits" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802
            posts.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"id": "sub-x", "state": "queued"}).encode()
            self.send_response(202)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", posts
    httpd.shutdown()
    httpd.server_close()


def test_an_oversized_file_is_refused_before_sending(server, tmp_path):
    url, posts = server
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(UploadTooLarge, match=rf"big\.csv: 1,001 bytes, over the server's upload "
                                             rf"limit of 1,000 bytes \({url}\); nothing was sent"):
        Client(url, "t").submit(big, ["toy-k4"])
    assert posts == []


def test_a_file_within_the_limit_is_sent(server, tmp_path):
    url, posts = server
    small = tmp_path / "small.csv"
    small.write_bytes(b"x" * LIMIT)
    assert Client(url, "t").submit(small, ["toy-k4"])["state"] == "queued"
    assert posts == ["/api/v1/submissions"]
