"""Time from `expaudit serve` on an empty data directory to its first /healthz answer.

Starts `expaudit serve` in a fresh temporary directory (its own Redis, an empty
local store), polls /healthz and the published index, and prints:

- serve -> /healthz (target: under 10 s on an empty data directory),
- serve -> first leaderboard page (the quick site with its notice),
- serve -> complete leaderboard (the worker's rebuild with every reference row,
  the notice gone), unless --no-wait-complete,
- the baseline: a bare gunicorn serving a one-route Flask app to its first
  answer, on the same machine in the same command, and the ratio of the two.

Usage: .venv/bin/python benchmarks/serve_start_bench.py [--timeout 900] [--no-wait-complete]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
TARGET_HEALTHZ_S = 10.0

BARE_APP = """
from flask import Flask
app = Flask(__name__)

@app.get("/healthz")
def healthz():
    return {"status": "ok"}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, started: float, timeout: float, accept=lambda r: r.ok) -> float | None:
    """Seconds from `started` to the first answer that `accept`s, or None after `timeout`."""
    while time.perf_counter() - started < timeout:
        try:
            response = requests.get(url, timeout=2)
            if accept(response):
                return time.perf_counter() - started
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return None


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def time_serve(timeout: float, wait_complete: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="expaudit-serve-") as tmp:
        port = free_port()
        env = {**os.environ, "EXPAUDIT_STORE": str(Path(tmp) / "store")}
        for name in ("EXPAUDIT_REDIS_URL", "EXPAUDIT_CATALOG"):
            env.pop(name, None)
        log = open(Path(tmp) / "serve.log", "wb")
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "expaudit", "serve", "--port", str(port),
                                 "--workers", "1"], cwd=tmp, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            healthz = wait_for(f"{base}/healthz", started, timeout)
            first = wait_for(f"{base}/leaderboard/index.json", started, timeout)
            complete = None
            if wait_complete:
                complete = wait_for(f"{base}/leaderboard/index.json", started, timeout,
                                    lambda r: r.ok and json.loads(r.content).get("notice") is None)
        finally:
            stop(proc)
            log.close()
        if healthz is None:
            sys.stderr.write((Path(tmp) / "serve.log").read_text(errors="replace")[-4000:])
        return {"healthz": healthz, "first_page": first, "complete": complete}


def time_bare_gunicorn(timeout: float) -> float | None:
    with tempfile.TemporaryDirectory(prefix="expaudit-bare-") as tmp:
        (Path(tmp) / "bare_app.py").write_text(BARE_APP)
        port = free_port()
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--workers", "1", "--bind",
                                 f"127.0.0.1:{port}", "bare_app:app"], cwd=tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            return wait_for(f"http://127.0.0.1:{port}/healthz", started, timeout)
        finally:
            stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-wait-complete", action="store_true",
                        help="stop after the first page (skip the reference rows' computation)")
    args = parser.parse_args()
    bare = time_bare_gunicorn(60.0)
    serve = time_serve(args.timeout, not args.no_wait_complete)

    def fmt(value: float | None) -> str:
        return "did not answer" if value is None else f"{value:.1f} s"

    print(f"baseline: bare gunicorn + Flask to first answer      {fmt(bare)}")
    print(f"expaudit serve (empty data dir) to /healthz           {fmt(serve['healthz'])}"
          f"  (target < {TARGET_HEALTHZ_S:g} s)")
    print(f"expaudit serve to the first leaderboard page          {fmt(serve['first_page'])}")
    if not args.no_wait_complete:
        print(f"expaudit serve to the complete leaderboard (worker)   {fmt(serve['complete'])}")
    if bare and serve["healthz"]:
        print(f"ratio serve-to-/healthz / bare gunicorn: {serve['healthz'] / bare:.2f}")
    ok = serve["healthz"] is not None and serve["healthz"] < TARGET_HEALTHZ_S
    print("target met" if ok else "target NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
