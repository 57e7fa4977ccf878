"""Load benchmark of the service's read paths and of submission-to-published latency.

One run, one load client (Debian's `wrk`) for every HTTP figure, each printed
as a ratio against its baseline:

1. The published leaderboard JSON (`settings/<id>.json`) as deployed, against
   nginx serving the same bytes from a directory (target >= 90%):
   - the compose front door: `docker/nginx/default.conf.template` (nginx with
     its cache) in front of a real S3 server (SeaweedFS) holding the files;
   - the embedded static route of the service under gunicorn
     (`/leaderboard/...`, what `expaudit serve` exposes without nginx).
2. The submission-status endpoint (`GET /api/v1/submissions/<id>` with a bearer
   token) against a bare Flask route of the same path under the same gunicorn
   settings (target >= 50%).
3. Submission-to-published latency of a K=50 scores file: POST, then poll the
   status every 50 ms until `published`; p50 and p95 over N submissions
   (target p50 <= 3 s). The first submission also computes the reference
   rules' reports (cached afterwards) and is reported apart as the warm-up.

The stack is real: Debian's redis-server, gunicorn with `service.web.app`, the
service worker (`expaudit worker`), a local-directory store (the embedded
default) and a synthetic K=50 setting (40 states x 5 draws x 5 seeds) served
through `EXPAUDIT_CATALOG`.

Every wrk figure is the best of `--rounds` runs taken in turn (a shared
machine's other load only ever lowers a rate), with each compared pair run
back to back. Beside each rate the benchmark reads the CPU time the serving
processes spent per request (from /proc: the server's process group, plus
Redis for the status endpoint and the S3 server for the front door), whose
ratio does not depend on what else the machine runs.

Usage:  .venv/bin/python benchmarks/api_bench.py [--duration 5] [--rounds 3]
        [--connections 32] [--submissions 20] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import requests

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
SETTING_ID = "bench-k50"
BUCKET = "expaudit"
S3_KEY, S3_SECRET = "bench-key", "bench-secret-0123456789"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk") or "/usr/bin/wrk"
GUNICORN_FLAGS = ["--workers", "2", "--worker-class", "sync", "--access-logfile", "-", "--no-control-socket"]
"""The gunicorn settings of `expaudit serve`, used for the service and the bare app alike."""
POLL_S = 0.05
"""Status polling interval of the latency measurement (bounds its resolution)."""


def bare_app():
    """A bare Flask app with a route shaped like the status endpoint (the comparison baseline)."""
    from flask import Flask, jsonify

    app = Flask("bare")

    @app.get("/api/v1/submissions/<submission_id>")
    def status(submission_id: str):
        return jsonify({"id": submission_id, "state": "published", "progress": 1.0})

    return app


# ------------------------------------------------------------- processes --

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Process:
    """A child in its own process group with its output in a log file."""

    def __init__(self, name: str, args: list[str], workdir: Path, env: dict | None = None,
                 cwd: Path | None = None) -> None:
        self.name, self.args, self.env, self.cwd = name, args, env, cwd
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, port: int | None = None, timeout: float = 60.0) -> "Process":
        with open(self.log, "ab") as handle:
            self.proc = subprocess.Popen(self.args, stdout=handle, stderr=subprocess.STDOUT,
                                         env=self.env, cwd=self.cwd, start_new_session=True)
        if port is not None:
            self.wait_port(port, timeout)
        return self

    def wait_port(self, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            with socket.socket() as sock:
                sock.settimeout(0.2)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: port {port} not open after {timeout} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def group_cpu_seconds(processes: list[Process]) -> float:
    """User + system CPU time of every live process in the processes' groups (Linux /proc)."""
    groups = {p.proc.pid for p in processes}
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if int(fields[2]) in groups:  # field 5: process group id
            ticks += int(fields[11]) + int(fields[12])  # fields 14, 15: utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def started(stack: ExitStack, process: Process, port: int | None = None) -> Process:
    stack.callback(process.stop)
    return process.start(port)


# ------------------------------------------------------------------ data --

def synthetic_setting(catalog: Path, k: int = 50, seed: int = 0):
    """Write a K x 200 x 5 setting (40 states x 5 draws) in the catalog layout; returns its data."""
    from leaderboard.matrix import SceneTable, TransferData
    from benchmark_data.registry import Setting
    from service.catalog import export_setting

    rng = np.random.default_rng(seed)
    n_states, n_draws = 40, 5
    state = np.repeat(np.arange(n_states), n_draws)
    draw = np.tile(np.arange(n_draws), n_states)
    p = np.clip(rng.uniform(0.2, 0.8, (k, 1)) + rng.normal(0, 0.25, (k, n_states))[:, state], 0, 1)
    outcomes = (rng.random((k, state.size, 5)) < p[:, :, None]).astype(np.int8)
    scenes = SceneTable(tuple(f"q{s:02d}-d{d}" for s, d in zip(state, draw)),
                        np.array([f"q{s:02d}" for s in state]), state % 4, draw)
    data = TransferData(tuple(f"stack-e{i:03d}" for i in range(k)), scenes, outcomes)
    summary = Setting(id=SETTING_ID, task="stack", mechanism="replay", k=k,
                      query_set="bench-q", sealed=False,
                      description="synthetic K=50 setting of the API benchmark")
    export_setting(catalog, summary, data)
    return data


def scores_csv(data, seed: int) -> bytes:
    """A K=50 long-format scores file (scene_id, experience_id, score): a noisy oracle."""
    y = data.success_matrix()
    scores = y + np.random.default_rng(seed).normal(0, 0.3, y.shape)
    lines = ["scene_id,experience_id,score"]
    for i, experience in enumerate(data.experience_ids):
        for q, scene in enumerate(data.scenes.scene_ids):
            lines.append(f"{scene},{experience},{scores[i, q]:.6f}")
    return ("\n".join(lines) + "\n").encode()


# ----------------------------------------------------------------- stack --

def service_env(workdir: Path, redis_url: str, admin_token: str) -> dict[str, str]:
    return {
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(workdir), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "EXPAUDIT_STORE": str(workdir / "store"), "EXPAUDIT_REDIS_URL": redis_url,
        "EXPAUDIT_CATALOG": str(workdir / "catalog"), "EXPAUDIT_ADMIN_TOKEN": admin_token,
        # the load test must measure the endpoint, not the per-token rate limit
        "EXPAUDIT_RATE_LIMIT_PER_MINUTE": str(10**9), "EXPAUDIT_MAX_ACTIVE_SUBMISSIONS": "1000",
    }


def start_service(stack: ExitStack, workdir: Path) -> tuple[str, dict[str, str], dict[str, Process]]:
    """Redis, gunicorn (`service.web.app`) and one service worker; returns (base URL, env, processes)."""
    redis_port, web_port = free_port(), free_port()
    (workdir / "redis").mkdir()
    redis = started(stack, Process("redis", ["redis-server", "--port", str(redis_port), "--bind",
                                     "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                                     str(workdir / "redis")], workdir), redis_port)
    env = service_env(workdir, f"redis://127.0.0.1:{redis_port}/0",
                      "ea_admin_" + secrets.token_urlsafe(24))
    web = started(stack, Process("web", [str(VENV_BIN / "gunicorn"), *GUNICORN_FLAGS, "--bind",
                                         f"127.0.0.1:{web_port}", "service.web.app:create_app()"],
                                 workdir, env, ROOT), web_port)
    started(stack, Process("worker", [str(VENV_BIN / "expaudit"), "worker"], workdir, env, ROOT))
    return f"http://127.0.0.1:{web_port}", env, {"redis": redis, "web": web}


def start_bare(stack: ExitStack, workdir: Path) -> tuple[str, Process]:
    port = free_port()
    bare = started(stack, Process("bare", [str(VENV_BIN / "gunicorn"), *GUNICORN_FLAGS, "--bind",
                                    f"127.0.0.1:{port}", "--pythonpath",
                                    str(ROOT / "benchmarks"), "api_bench:bare_app()"],
                           workdir, cwd=ROOT), port)
    return f"http://127.0.0.1:{port}", bare


def nginx_conf(workdir: Path, name: str, server_block: str) -> Path:
    """A complete nginx.conf around one server block: the `http` settings of the
    official nginx image (sendfile, keep-alive), two workers, no access log."""
    tmp = workdir / name
    tmp.mkdir()
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"{user}worker_processes 2;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\n"
        "events { worker_connections 1024; }\n"
        f"http {{\n access_log off;\n include /etc/nginx/mime.types;\n"
        " sendfile on;\n tcp_nopush on;\n keepalive_timeout 65;\n"
        f" client_body_temp_path {tmp}/body;\n proxy_temp_path {tmp}/proxy;\n"
        f" fastcgi_temp_path {tmp}/fcgi;\n uwsgi_temp_path {tmp}/uwsgi;\n"
        f" scgi_temp_path {tmp}/scgi;\n{server_block}\n}}\n")
    return conf


def start_nginx_static(stack: ExitStack, workdir: Path, site: Path) -> tuple[str, Process]:
    port = free_port()
    conf = nginx_conf(workdir, "nginx-static", (
        f"server {{ listen 127.0.0.1:{port}; root {site}; location / {{ try_files $uri =404; }} }}"))
    nginx = started(stack, Process("nginx-static", [NGINX, "-c", str(conf), "-g", "daemon off;"],
                                   workdir), port)
    return f"http://127.0.0.1:{port}", nginx


def start_seaweed(stack: ExitStack, workdir: Path) -> tuple[str, Process]:
    """SeaweedFS S3 with an admin identity and anonymous read of the bucket."""
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [
        {"name": "admin", "credentials": [{"accessKey": S3_KEY, "secretKey": S3_SECRET}],
         "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
        {"name": "anonymous", "actions": [f"Read:{BUCKET}"]}]}))
    ports = {name: free_port() for name in ("master", "master.port.grpc", "volume",
                                              "volume.port.grpc", "filer", "filer.port.grpc",
                                              "s3", "s3.port.grpc", "admin")}
    (workdir / "weed").mkdir()
    args = [str(VENV_BIN / "weed"), "mini", f"-dir={workdir / 'weed'}", "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1", f"-s3.config={config}", "-webdav=false", "-admin.ui=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-volume.preStopSeconds=0",
            "-master.volumeSizeLimitMB=64"]
    for name, port in ports.items():
        flag = name if "." in name else f"{name}.port"
        args.append(f"-{flag}={port}")
    weed = started(stack, Process("seaweedfs", args, workdir), ports["s3"])
    return f"http://127.0.0.1:{ports['s3']}", weed


def upload_site(endpoint: str, site: Path) -> None:
    """Copy the published files into the bucket's leaderboard/ prefix (as the publish job does)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from service.submissions import LEADERBOARD_PREFIX, content_type
    from service.store import make_s3_client

    client = make_s3_client(endpoint, "us-east-1", S3_KEY, S3_SECRET)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except (BotoCoreError, ClientError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        key = path.relative_to(site).as_posix()
        client.put_object(Bucket=BUCKET, Key=LEADERBOARD_PREFIX + key, Body=path.read_bytes(),
                          ContentType=content_type(key))


def start_front_door(stack: ExitStack, workdir: Path, s3_endpoint: str) -> tuple[str, Process]:
    """The compose front door's nginx template, with compose's host names replaced."""
    port = free_port()
    template = (ROOT / "docker" / "nginx" / "default.conf.template").read_text()
    host = s3_endpoint.removeprefix("http://")
    server = (template.replace("${EXPAUDIT_BUCKET}", BUCKET)
              .replace("listen 80;", f"listen 127.0.0.1:{port};")
              .replace("http://minio:9000", s3_endpoint).replace("Host minio:9000", f"Host {host}")
              .replace("http://web:8000", "http://127.0.0.1:9")
              .replace("/var/cache/nginx/leaderboard", str(workdir / "front-cache")))
    conf = nginx_conf(workdir, "nginx-front", server)
    nginx = started(stack, Process("nginx-front", [NGINX, "-c", str(conf), "-g", "daemon off;"],
                                   workdir), port)
    return f"http://127.0.0.1:{port}", nginx


# ---------------------------------------------------------- measurements --

def create_token(base: str, admin_token: str) -> str:
    response = requests.post(f"{base}/api/v1/tokens", json={"name": "bench", "owner": "bench"}, timeout=30,
                             headers={"Authorization": f"Bearer {admin_token}"})
    response.raise_for_status()
    return response.json()["token"]


def submit_and_wait(base: str, token: str, body: bytes, name: str, timeout: float = 600) -> tuple[str, float]:
    """POST one scores file and poll until published; returns (submission id, seconds)."""
    headers = {"Authorization": f"Bearer {token}"}
    start = time.perf_counter()
    response = requests.post(f"{base}/api/v1/submissions", headers=headers, timeout=60,
                             files={"file": ("scores.csv", body, "text/csv")},
                             data={"setting": SETTING_ID, "name": name, "public": "true"})
    if response.status_code != 202:
        raise RuntimeError(f"submission refused: {response.status_code} {response.text[:500]}")
    sid = response.json()["id"]
    while time.perf_counter() - start < timeout:
        state = requests.get(f"{base}/api/v1/submissions/{sid}", headers=headers,
                             timeout=30).json()
        if state["state"] == "published":
            return sid, time.perf_counter() - start
        if state["state"] == "failed":
            raise RuntimeError(f"submission {sid} failed: {state}")
        time.sleep(POLL_S)
    raise RuntimeError(f"submission {sid} not published after {timeout} s")


def latency(base: str, token: str, data, n: int) -> dict:
    _, warmup = submit_and_wait(base, token, scores_csv(data, seed=1000), "warm-up")
    times, last = [], ""
    for i in range(n):
        last, seconds = submit_and_wait(base, token, scores_csv(data, seed=i), f"bench {i}")
        times.append(seconds)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(np.ceil(0.95 * len(ordered))) - 1)]
    return {"warmup_s": warmup, "n": n, "p50_s": statistics.median(times), "p95_s": p95,
            "max_s": max(times), "last_submission": last}


_UNITS = {"": 1.0, "k": 1e3, "M": 1e6}


def wrk(url: str, duration: int, connections: int, headers: dict[str, str] | None = None,
        servers: tuple[Process, ...] = ()) -> dict:
    """Requests/s, non-2xx count and the servers' CPU time per request of one wrk run."""
    cpu_before = group_cpu_seconds(list(servers))
    args = [WRK, "-t", "2", "-c", str(connections), "-d", f"{duration}s", "--latency"]
    for key, value in (headers or {}).items():
        args += ["-H", f"{key}: {value}"]
    out = subprocess.run([*args, url], capture_output=True, text=True, timeout=duration + 60,
                         check=True).stdout
    cpu = group_cpu_seconds(list(servers)) - cpu_before
    total = re.search(r"(\d+) requests in", out)
    rate = re.search(r"Requests/sec:\s+([\d.]+)([kM]?)", out)
    if rate is None:
        raise RuntimeError(f"no Requests/sec in wrk output:\n{out}")
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    return {"url": url, "requests_per_s": float(rate.group(1)) * _UNITS[rate.group(2)],
            "server_cpu_us_per_request": 1e6 * cpu / max(int(total.group(1)), 1) if total else None,
            "non_2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1) if errors else "",
            "latency_p50": p50.group(1) if p50 else None}


def load_rounds(targets, args: argparse.Namespace) -> dict[str, dict]:
    """Run every target once per round, compared pairs back to back, and keep each
    target's best round: on a shared machine other load only ever lowers a rate."""
    samples: dict[str, list[dict]] = {name: [] for name, _, _, _ in targets}
    for _ in range(args.rounds):
        for name, url, headers, servers in targets:
            samples[name].append(wrk(url, args.duration, args.connections, headers, servers))
    load = {}
    for name, runs in samples.items():
        best = max(runs, key=lambda run: run["requests_per_s"])
        load[name] = {**best, "rounds_requests_per_s": [run["requests_per_s"] for run in runs],
                      "server_cpu_us_per_request": statistics.median(
                          run["server_cpu_us_per_request"] for run in runs),
                      "non_2xx": sum(run["non_2xx"] for run in runs)}
    return load


def same_bytes(urls: list[str], headers: dict | None = None) -> bytes:
    bodies = [requests.get(url, headers=headers, timeout=30) for url in urls]
    for url, body in zip(urls, bodies):
        body.raise_for_status()
    if len({b.content for b in bodies}) != 1:
        raise RuntimeError(f"the compared URLs serve different bytes: {urls}")
    return bodies[0].content


def run(args: argparse.Namespace, workdir: Path) -> dict:
    with ExitStack() as stack:
        data = synthetic_setting(workdir / "catalog")
        base, env, service = start_service(stack, workdir)
        token = create_token(base, env["EXPAUDIT_ADMIN_TOKEN"])
        lat = latency(base, token, data, args.submissions)

        site = workdir / "store" / "leaderboard"
        static, static_nginx = start_nginx_static(stack, workdir, site)
        s3_endpoint, weed = start_seaweed(stack, workdir)
        upload_site(s3_endpoint, site)
        front, front_nginx = start_front_door(stack, workdir, s3_endpoint)
        path = f"settings/{SETTING_ID}.json"
        body = same_bytes([f"{static}/{path}", f"{base}/leaderboard/{path}", f"{front}/{path}"])
        bare, bare_gunicorn = start_bare(stack, workdir)
        auth = {"Authorization": f"Bearer {token}"}
        status_path = f"api/v1/submissions/{lat['last_submission']}"
        time.sleep(2)  # let the worker and the servers settle before the load runs

        targets = (  # name, URL, headers, the servers whose CPU time the request costs
            ("nginx_static", f"{static}/{path}", None, (static_nginx,)),
            ("front_door", f"{front}/{path}", None, (front_nginx, weed)),
            ("gunicorn_static_route", f"{base}/leaderboard/{path}", None, (service["web"],)),
            ("status_endpoint", f"{base}/{status_path}", auth, (service["web"], service["redis"])),
            ("bare_flask", f"{bare}/{status_path}", None, (bare_gunicorn,)),
        )
        load = load_rounds(targets, args)
    rate = {name: result["requests_per_s"] for name, result in load.items()}
    cost = {name: result["server_cpu_us_per_request"] for name, result in load.items()}
    pairs = {"front_door_vs_nginx": ("front_door", "nginx_static"),
             "gunicorn_static_route_vs_nginx": ("gunicorn_static_route", "nginx_static"),
             "status_vs_bare_flask": ("status_endpoint", "bare_flask")}
    return {
        "leaderboard_json_bytes": len(body),
        "load": load,
        "ratios": {key: rate[a] / rate[b] for key, (a, b) in pairs.items()},
        "cpu_efficiency_ratios": {key: cost[b] / cost[a] for key, (a, b) in pairs.items()},
        "latency": lat,
        "settings": {"duration_s": args.duration, "rounds": args.rounds,
                     "connections": args.connections,
                     "wrk_threads": 2, "gunicorn": " ".join(GUNICORN_FLAGS),
                     "cpu_count": os.cpu_count()},
    }


def report(result: dict) -> str:
    load, ratios, lat = result["load"], result["ratios"], result["latency"]
    settings = result["settings"]
    lines = [f"published leaderboard JSON ({result['leaderboard_json_bytes']} bytes); wrk "
             f"{settings['connections']} connections, best of {settings['rounds']} x "
             f"{settings['duration_s']} s runs:"]
    for name, item in load.items():
        flag = f"  NON-2XX {item['non_2xx']}" if item["non_2xx"] else ""
        rounds = ", ".join(f"{r:.0f}" for r in item["rounds_requests_per_s"])
        lines.append(f"  {name:24s} {item['requests_per_s']:10.0f} req/s  p50 "
                     f"{item['latency_p50']:>8s}  server CPU {item['server_cpu_us_per_request']:7.0f} us/req"
                     f"  (rounds: {rounds}){flag}")
    cpu = result["cpu_efficiency_ratios"]
    lines += [
        "ratio (req/s; in brackets the same ratio of server CPU time per request):",
        f"  front door (nginx cache over S3) / nginx static: {ratios['front_door_vs_nginx']:6.1%}  "
        f"[{cpu['front_door_vs_nginx']:6.1%}]  (target >= 90%)",
        f"  gunicorn static route / nginx static:            {ratios['gunicorn_static_route_vs_nginx']:6.1%}  "
        f"[{cpu['gunicorn_static_route_vs_nginx']:6.1%}]",
        f"  status endpoint / bare Flask route:              {ratios['status_vs_bare_flask']:6.1%}  "
        f"[{cpu['status_vs_bare_flask']:6.1%}]  (target >= 50%)",
        f"submission to published, K=50, n={lat['n']}: p50 {lat['p50_s']:.2f} s, p95 {lat['p95_s']:.2f} s, "
        f"max {lat['max_s']:.2f} s (target p50 <= 3 s); warm-up incl. reference rules {lat['warmup_s']:.1f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="wrk runs per target (best kept)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections")
    parser.add_argument("--submissions", type=int, default=20, help="latency sample size")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args(argv)
    for binary in (WRK, NGINX, shutil.which("redis-server") or "redis-server"):
        if not Path(binary).exists():
            parser.error(f"{binary} is missing: run scripts/bootstrap.sh dev")
    workdir = Path(tempfile.mkdtemp(prefix="expaudit-api-bench-"))
    try:
        result = run(args, workdir)
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
