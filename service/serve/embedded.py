"""`expaudit serve`: web + worker on embedded defaults, in one command.

Everything missing from the configuration is made under `var/`: a private `redis-server`,
the store, an admin token (its file's path printed, never the token), the computed cells
of a runner started when the simulator is installed, the metrics files. A site is
published in seconds before serving (`service.serve.first_start`), the worker serves
the `selectors` queue too, and gunicorn runs gevent workers (`WEB_WORKER_CLASS`), since
no proxy shields it from slow clients. Each child that exits is restarted with back-off
(`SUPERVISOR_MAX_BACKOFF_S`, `SUPERVISOR_STABLE_S`); `serve` ends only on SIGINT/SIGTERM.
What each part does and why: docs/service.md ("Running it").
"""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import redis as redis_lib

from benchmark_data.paths import root_or_default
from expaudit.errors import InternalError, UserError
from service.process import (MULTIPROC_DIR_VARIABLE, ServiceConfig, computed_cells_dir, defaults,
                             serve_metrics, to_env)
from service.catalog import open_catalog
from service.serve.first_start import publish_first
from service.store import S3Store, open_store

log = logging.getLogger(__name__)


class StartFailed(InternalError, RuntimeError):
    """A process `serve` started (Redis, the web server) exited or did not listen in time."""


class NoRedisServer(UserError, RuntimeError):
    """No Redis is configured and there is no `redis-server` here to start one."""


class MetricsPortTaken(UserError, RuntimeError):
    """The metrics listener (`--metrics-port`) could not be opened."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(host: str, port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartFailed(f"{Path(proc.args[0]).name} exited with {proc.returncode} during start-up")
        with socket.socket() as sock:
            sock.settimeout(0.3)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise StartFailed(f"nothing listens on {host}:{port} after {timeout} s")


def start_redis(directory: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """A private `redis-server` with append-only persistence in `directory` (on `port`, or a
    free one)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise NoRedisServer("no Redis configured and no redis-server on PATH: install redis-server "
                            "or set EXPAUDIT_REDIS_URL")
    directory.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    with open(directory / "redis.log", "ab") as log_file:
        # its own session: a Ctrl-C at the terminal must not stop Redis before the processes
        # that deregister from it on their way out (`serve` stops it last)
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                                 str(directory), "--appendonly", "yes", "--save", ""],
                                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for_port("127.0.0.1", port, proc)
    return proc, f"redis://127.0.0.1:{port}/0"


def _wait_for_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until `url` answers (any HTTP status: the web app is loaded), `proc` exits, or `timeout`
    passes; never raises (the supervisor deals with a web process that does not come up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)


def admin_token_file(path: Path) -> str:
    """Read the admin token from `path`, creating a random one (mode 0600) if absent."""
    if path.is_file():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = "ea_admin_" + secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token


def publish_initial(config: ServiceConfig) -> int:
    """A site at once (no reference report computed here); the worker's rebuild completes it."""
    store = open_store(config)
    if isinstance(store, S3Store):
        store.ensure_bucket()
    redis = redis_lib.Redis.from_url(config.redis_url, socket_timeout=5, socket_connect_timeout=3)
    try:
        return publish_first(store, open_catalog(config), redis).files_written
    finally:
        redis.close()


def frozen_root(config: ServiceConfig) -> Path:
    """The frozen data directory web, worker and runner all use, as an absolute path.

    `EXPAUDIT_FROZEN_ROOT` (config.frozen_root) when set, else the data shipped
    in the package; absolute, so a child started in another directory agrees.
    """
    return root_or_default(config.frozen_root).resolve()


def simulator_missing() -> str | None:
    """Why this Python cannot run rollouts (the `sim` extra is absent), or None when it can."""
    if importlib.util.find_spec("robosuite") is None:
        return "robosuite is not installed (pip install 'expaudit[sim]')"
    return None


def worker_command() -> list[str]:
    """The command of the embedded worker: it serves `selectors` too, so container
    submissions run in the local sandbox with or without a runner."""
    return [sys.executable, "-m", "expaudit", "worker", "--queues",
            ",".join(defaults.WORKER_QUEUE_CHOICES)]


def runner_command(root: Path) -> list[str]:
    """The command of the embedded rollout runner (the `expaudit runner` role)."""
    return [sys.executable, "-m", "expaudit", "runner", "--frozen-root", str(root)]


def web_command(host: str, port: int, web_workers: int, *,
                public_metrics: bool = False) -> list[str]:
    """The command of the embedded web process (gunicorn with `service.process.gunicorn_conf`):
    gevent workers, which a slow client does not hold (`WEB_WORKER_CLASS`), and the app
    without `/metrics` unless `public_metrics`."""
    app = ("service.web.app:create_app()" if public_metrics
           else "service.web.app:create_app(metrics_route=False)")
    return [sys.executable, "-m", "gunicorn", "--config", "python:service.process.gunicorn_conf",
            "--worker-class", defaults.WEB_WORKER_CLASS,
            "--worker-connections", str(defaults.WEB_WORKER_CONNECTIONS),
            "--keep-alive", str(defaults.WEB_HEADER_TIMEOUT_S),
            "--workers", str(web_workers), "--bind", f"{host}:{port}", "--access-logfile", "-",
            "--timeout", str(defaults.WEB_TIMEOUT_S), "--no-control-socket", app]


def fresh_metrics_dir(var_dir: Path) -> Path:
    """The Prometheus multiprocess directory of this `serve` (absolute), emptied: the counts
    of an earlier run are not this run's."""
    path = (var_dir / defaults.METRICS_DIR).resolve()
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def start_metrics_listener(config: ServiceConfig, host: str, port: int, path: Path):
    """The metrics of every web process (`path`) and the queue lengths on `host:port`,
    answered by a thread of this process; returns the server (`shutdown()`)."""
    redis = redis_lib.Redis.from_url(config.redis_url, socket_timeout=5, socket_connect_timeout=3)
    try:
        return serve_metrics(host, port, str(path), redis)
    except OSError as exc:
        raise MetricsPortTaken(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") \
            from None


def serve(config: ServiceConfig, *, host: str, port: int, web_workers: int,
          on_ready: Callable[[str, str], None], var_dir: Path = Path("var"),
          on_runner: Callable[[str], None] | None = None, metrics_port: int | None = None,
          metrics_host: str = defaults.METRICS_HOST, public_metrics: bool = False) -> int:
    """Run Redis (if needed), gunicorn, one worker and (with the simulator) one runner
    until interrupted, restarting any of them that exits.

    Args:
        on_ready: called with (URL, where the admin token is) once the web
            process accepts connections.
        on_runner: called with one sentence saying whether a rollout runner was
            started, on which frozen root, or why not.
        metrics_port: serve the metrics of all web processes on
            `metrics_host:metrics_port` (None: no metrics listener).
        public_metrics: answer `/metrics` on the public port too.
    """
    children: list[Child] = []
    redis_child = None
    metrics_listener = None
    try:
        if not config.redis_url:
            redis_dir = var_dir / "redis"
            proc, url = start_redis(redis_dir)
            redis_port = int(url.rsplit(":", 1)[1].split("/")[0])
            redis_child = Child("redis", lambda: start_redis(redis_dir, redis_port)[0], proc)
            config = replace(config, redis_url=url)
        token_note = "the configured EXPAUDIT_ADMIN_TOKEN"
        if not config.admin_token:
            config = replace(config, admin_token=admin_token_file(var_dir / "admin-token"))
            token_note = f"the admin token is in {var_dir / 'admin-token'}"
        if config.catalog is None:
            config = replace(config, frozen_root=str(frozen_root(config)),
                             cells_dir=str(computed_cells_dir(config).resolve()))
        n_files = publish_initial(config)
        log.info("leaderboard published: %d files", n_files)
        env = {**os.environ, **to_env(config)}
        metrics_dir = fresh_metrics_dir(var_dir)
        web_env = {**env, MULTIPROC_DIR_VARIABLE: str(metrics_dir)}
        web_args = web_command(host, port, web_workers, public_metrics=public_metrics)
        web = Child.started("web", lambda: subprocess.Popen(web_args, env=web_env))
        children.append(web)
        _wait_for_port(host, port, web.proc)
        # the worker and runner import the audit and the simulator: started once the web
        # process answers, they do not slow its first answer on a small machine
        _wait_for_http(f"http://{host}:{port}/healthz", web.proc)
        children.append(Child.started("worker", lambda: subprocess.Popen(worker_command(), env=env)))
        runners: list[subprocess.Popen] = []
        note = start_runner(config, env, runners)
        children.extend(Child("runner", lambda args=p.args: subprocess.Popen(args, env=env), p)
                        for p in runners)
        if on_runner is not None:
            on_runner(note)
        if metrics_port is not None:
            metrics_listener = start_metrics_listener(config, metrics_host, metrics_port,
                                                      metrics_dir)
            log.info("metrics of all web processes: http://%s:%d/metrics", metrics_host,
                     metrics_port)
        on_ready(f"http://{host}:{port}", token_note)
        return _supervise(children + ([redis_child] if redis_child is not None else []))
    finally:
        if metrics_listener is not None:
            metrics_listener.shutdown()
            metrics_listener.server_close()
        _stop([c.proc for c in children])  # the web, worker and runner first: they deregister
        if redis_child is not None:
            _stop([redis_child.proc])


def start_runner(config: ServiceConfig, env: dict[str, str],
                  children: list[subprocess.Popen]) -> str:
    """Start one rollout runner when it can do anything; returns what happened, as a sentence."""
    if config.catalog is not None:
        return ("no rollout runner: EXPAUDIT_CATALOG serves complete directory settings, "
                "which need no rollouts")
    missing = simulator_missing()
    root = frozen_root(config)
    if missing is not None:
        return (f"no rollout runner: {missing}; submissions needing missing cells wait for "
                f"`expaudit runner --frozen-root {shown_root(root)}`")
    children.append(subprocess.Popen(runner_command(root), env=env))
    store = config.store if config.is_s3 else shown_root(Path(config.store).resolve(),
                                                          "$EXPAUDIT_STORE")
    return f"rollout runner started: missing cells go to the store ({store})"


def shown_root(root: Path, variable: str = "$EXPAUDIT_FROZEN_ROOT") -> str:
    """The frozen root as printed to the console: relative to the current directory when it
    is under it, else by the variable that names it; never an absolute host path (a console
    line is copied into issues and logs)."""
    try:
        return str(root.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return variable


@dataclass
class Child:
    """One supervised process: its role name, how to start it, and its restart schedule."""

    name: str
    start: Callable[[], subprocess.Popen]
    proc: subprocess.Popen
    started_at: float = field(default_factory=time.monotonic)
    backoff_s: float = 1.0
    restart_at: float | None = None

    @classmethod
    def started(cls, name: str, start: Callable[[], subprocess.Popen]) -> "Child":
        return cls(name, start, start())

    def tend(self, now: float) -> None:
        """Schedule a restart once the process has exited; start it when the time has come."""
        if self.restart_at is None:
            if self.proc.poll() is None:
                return
            if now - self.started_at >= defaults.SUPERVISOR_STABLE_S:
                self.backoff_s = 1.0
            log.error("%s exited with %s; restarting it in %.0f s", self.name, self.proc.returncode,
                      self.backoff_s)
            self.restart_at = now + self.backoff_s
            self.backoff_s = min(self.backoff_s * 2, defaults.SUPERVISOR_MAX_BACKOFF_S)
        elif now >= self.restart_at:
            try:
                self.proc = self.start()
                log.warning("%s restarted (pid %d)", self.name, self.proc.pid)
            except (OSError, RuntimeError) as exc:  # e.g. Redis not listening yet: try again later
                log.error("%s did not start (%s); retrying in %.0f s", self.name,
                          type(exc).__name__, self.backoff_s)
                self.restart_at = now + self.backoff_s
                self.backoff_s = min(self.backoff_s * 2, defaults.SUPERVISOR_MAX_BACKOFF_S)
                return
            self.started_at, self.restart_at = now, None


def _supervise(children: list[Child]) -> int:
    """Tend the children until SIGINT or SIGTERM; returns 0."""
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while stop["signal"] is None:
        for child in children:
            child.tend(time.monotonic())
        time.sleep(0.5)
    return 0


def _stop(children: list[subprocess.Popen]) -> None:
    for child in reversed(children):
        if child.poll() is None:
            child.terminate()
    for child in reversed(children):
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=5)
