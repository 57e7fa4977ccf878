"""Issue 30, item 8: metrics that add up every web process, off `serve`'s public port.

`/metrics` answered from whichever gunicorn process took the request: six scrapes of one
counter read 2, 1, 1, 2, 2, 1, so Prometheus saw resets. Now the web processes write their
counts to the Prometheus client's multiprocess files and a scrape adds them up. Each test
serves requests on several processes, then scrapes several times: every scrape must give
the whole count. `expaudit serve` keeps `/metrics` off its public port (404) and serves it
on `--metrics-port`; the container's `web` role (behind nginx, which hides `/metrics`)
answers it on its own port, from the same files.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from service.serve.embedded import web_command
from tests.support.paths import REPO_ROOT
from tests.support.servers import (ADMIN_TOKEN, ProcessServer, RedisServer, free_port, read_until,
                                   service_env, synthetic_setting, wait_for_port, write_catalog)

HEALTHZ_COUNT = re.compile(
    r'^expaudit_http_requests_total\{endpoint="root\.healthz",method="GET",status="200"\} (\S+)$',
    re.MULTILINE)
REQUESTS = 24
SCRAPES = 6


def healthz_count(text: str) -> float:
    found = HEALTHZ_COUNT.search(text)
    return float(found.group(1)) if found else 0.0


def pids_with_counts(directory: Path) -> set[str]:
    """The processes that wrote counters into the multiprocess directory."""
    return {p.stem.rsplit("_", 1)[1] for p in directory.glob("counter_*.db")}


def hit_and_scrape(url: str, scrape_url: str) -> list[float]:
    """`REQUESTS` health checks, eight at a time on new connections, then `SCRAPES` scrapes;
    returns what each scrape counts of those health checks."""
    before = healthz_count(requests.get(scrape_url, timeout=30).text)

    def check(_n: int) -> int:
        with requests.Session() as fresh:
            return fresh.get(f"{url}/healthz", timeout=30).status_code

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(check, range(REQUESTS))) == [200] * REQUESTS
    return [healthz_count(requests.get(scrape_url, timeout=30).text) - before
            for _ in range(SCRAPES)]


def children(pid: int) -> set[int]:
    """The live child processes of `pid` (Linux /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def counts_add_up_across_processes(url: str, scrape_url: str, metrics_dir: Path,
                                   gunicorn_master: int) -> None:
    """Every scrape gives the whole count, twice: once after a round of health checks, and
    again after every web process was killed (gunicorn starts others) and another round
    was served by the new ones. So the counts come from several processes, exited ones
    among them, and never fall."""
    assert hit_and_scrape(url, scrape_url) == [REQUESTS] * SCRAPES
    first = children(gunicorn_master)
    assert len(first) >= 2
    for pid in first:
        os.kill(pid, signal.SIGKILL)
    total = healthz_count(requests.get(scrape_url, timeout=30).text)
    assert total >= REQUESTS, "the counts of the killed processes were lost"
    assert hit_and_scrape(url, scrape_url) == [REQUESTS] * SCRAPES
    counted = {int(pid) for pid in pids_with_counts(metrics_dir)}
    assert counted & first and counted - first, "the counts are not those of several processes"
    assert healthz_count(requests.get(scrape_url, timeout=30).text) == total + REQUESTS


@pytest.mark.slow
def test_serve_adds_up_every_web_process_on_its_metrics_port_only(tmp_path):
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("metrics-k3", k=3))
    port, metrics_port = free_port(), free_port()
    stale = tmp_path / "var" / "metrics"
    stale.mkdir(parents=True)
    (stale / "counter_999999.db").write_bytes(b"left by an earlier run")
    env = service_env(EXPAUDIT_N_SHUFFLES="100", EXPAUDIT_N_BOOTSTRAP="100",
                      PYTHONPATH=str(REPO_ROOT), EXPAUDIT_CATALOG=str(catalog))
    proc = subprocess.Popen([sys.executable, "-m", "expaudit", "serve", "--port", str(port),
                             "--workers", "3", "--metrics-port", str(metrics_port)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        read_until(proc, "expaudit is serving at", 120)
        url = f"http://127.0.0.1:{port}"
        public = requests.get(f"{url}/metrics", timeout=30)
        assert public.status_code == 404 and "expaudit_" not in public.text
        assert not (stale / "counter_999999.db").exists()
        master = next(pid for pid in children(proc.pid)
                      if b"gunicorn" in Path(f"/proc/{pid}/cmdline").read_bytes())
        counts_add_up_across_processes(url, f"http://127.0.0.1:{metrics_port}/metrics", stale,
                                       master)
        text = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).text
        assert 'expaudit_queue_length{queue="audit"}' in text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        proc.stdout.close()
    assert proc.returncode == 0
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2)


def test_serve_keeps_metrics_off_the_public_app_unless_opened():
    assert web_command("127.0.0.1", 8000, 2)[-1] == "service.web.app:create_app(metrics_route=False)"
    opened = web_command("127.0.0.1", 8000, 2, public_metrics=True)
    assert opened[-1] == "service.web.app:create_app()"


def test_the_web_role_adds_up_its_processes_across_a_worker_restart(tmp_path):
    """The container's web role (three sync processes, as behind nginx): every scrape of its
    `/metrics` gives the whole count, also after gunicorn replaced killed workers."""
    redis_server = RedisServer(tmp_path / "redis").start()
    catalog = write_catalog(tmp_path / "catalog", synthetic_setting("role-k3", k=3, n_states=2))
    metrics_dir = tmp_path / "expaudit-metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_999999.db").write_bytes(b"left by an earlier start")
    port = free_port()
    env = service_env(PYTHONPATH=str(REPO_ROOT), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                      EXPAUDIT_PORT=str(port), EXPAUDIT_WEB_WORKERS="3", EXPAUDIT_STATE_DIR=str(tmp_path),
                      EXPAUDIT_REDIS_URL=redis_server.url, EXPAUDIT_CATALOG=str(catalog),
                      EXPAUDIT_STORE=str(tmp_path / "store"), EXPAUDIT_ADMIN_TOKEN=ADMIN_TOKEN)
    env.pop("EXPAUDIT_FROZEN_ROOT", None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    web = ProcessServer([str(REPO_ROOT / "docker" / "entrypoint.sh"), "web"], tmp_path / "web.log",
                        env=env, cwd=tmp_path).start()
    try:
        wait_for_port(port, 60, web.proc, web.log)
        url = f"http://127.0.0.1:{port}"
        assert not (metrics_dir / "counter_999999.db").exists()
        counts_add_up_across_processes(url, f"{url}/metrics", metrics_dir, web.proc.pid)
    finally:
        web.stop()
        redis_server.stop()
