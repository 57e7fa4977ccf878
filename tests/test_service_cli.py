"""`expaudit serve` on embedded defaults: its own Redis, a local store under var/, one command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import requests

from tests.servers import (REPO_ROOT, free_port, scores_csv, service_env, synthetic_setting,
                           write_catalog)

pytestmark = pytest.mark.slow


def _read_until(proc: subprocess.Popen, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            seen.append(line)
            if needle in line:
                return line
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.1)
    raise AssertionError(f"no '{needle}' in output:\n{''.join(seen)}")


def test_serve_starts_everything_and_stops_cleanly(tmp_path):
    summary, data = synthetic_setting("serve-k3", k=3)
    catalog = write_catalog(tmp_path / "catalog", (summary, data))
    port = free_port()
    env = service_env(EXPAUDIT_CATALOG=str(catalog), EXPAUDIT_N_SHUFFLES="100",
                      EXPAUDIT_N_BOOTSTRAP="100", PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "expaudit", "serve", "--port", str(port),
                             "--workers", "1"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        line = _read_until(proc, "expaudit is serving at", 90)
        url = f"http://127.0.0.1:{port}"
        assert url in line and "var/admin-token" in line
        admin = (tmp_path / "var" / "admin-token").read_text().strip()
        assert oct((tmp_path / "var" / "admin-token").stat().st_mode)[-3:] == "600"
        assert admin not in line
        index = requests.get(f"{url}/", timeout=10)
        assert index.status_code == 200 and "serve-k3" in index.text  # published before serving
        token = requests.post(f"{url}/api/v1/tokens", json={"name": "me"},
                              headers={"Authorization": f"Bearer {admin}"}, timeout=10).json()["token"]
        scores = tmp_path / "scores.csv"
        scores.write_bytes(scores_csv(data))
        cli_env = {**env, "EXPAUDIT_SERVER": url, "EXPAUDIT_TOKEN": token}
        submitted = subprocess.run([sys.executable, "-m", "expaudit", "submit", str(scores),
                                    "--setting", "serve-k3", "--public", "--wait"], env=cli_env,
                                   capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert "published" in submitted.stdout
        assert (tmp_path / "var" / "store" / "leaderboard" / "index.html").is_file()
        assert (tmp_path / "var" / "redis" / "appendonlydir").is_dir()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        proc.stdout.close()
    assert proc.returncode == 0
    time.sleep(0.5)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
