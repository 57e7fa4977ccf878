"""Start a rootful Podman engine that serves the Docker API on a Unix socket.

The engine keeps its images in a cache directory outside the checkout
(`EXPAUDIT_ENGINE_CACHE`, default `~/.cache/expaudit-engine`), so stand-in
images and build layers survive between test runs; one test session at a
time holds that cache (a lock file), a second one waits for it. Containers,
volumes and networks left by an earlier session are removed at start: the
store is private to these tests.

On this kind of machine (cgroup v1 in hybrid mode) crun refuses to start
containers, so the engine uses runc with cgroupfs, and every container gets
explicit `nofile`/`nproc` limits (the engine's defaults exceed the hard
limits). Missing Debian packages are installed with apt-get when running as
root; `EngineUnavailable` says why an engine cannot be had at all.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

PACKAGES = {"podman": "podman", "runc": "runc", "netavark": "netavark",
            "aardvark-dns": "aardvark-dns", "conmon": "conmon", "catatonit": "catatonit",
            "debootstrap": "debootstrap", "iptables": "iptables"}
"""Command -> Debian package the engine and the stand-in base need."""
COMMAND_DIRS = ("/usr/bin", "/usr/sbin", "/usr/libexec/podman", "/usr/lib/podman")
LOCK_WAIT_S = 1800
KEEP_FREE_BYTES = 20 << 30
"""Below this much free disk, a starting engine drops untagged images (earlier
builds' layers); each change to the sources leaves one project layer behind."""
START_WAIT_S = 60

CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "{tmp_dir}"
[network]
network_backend = "netavark"
"""

STORAGE_CONF = """\
[storage]
driver = "overlay"
graphroot = "{graphroot}"
runroot = "{runroot}"
"""


class EngineUnavailable(RuntimeError):
    """No container engine can be started here; the message says why."""


def cache_dir() -> Path:
    """Where images and the stand-in base root are kept between runs."""
    configured = os.environ.get("EXPAUDIT_ENGINE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "expaudit-engine"


def _find(command: str) -> str | None:
    found = shutil.which(command)
    if found:
        return found
    for directory in COMMAND_DIRS:
        if Path(directory, command).exists():
            return str(Path(directory, command))
    return None


def ensure_packages(log) -> None:
    """Install the Debian packages of the engine that are missing (root only)."""
    if sys.platform != "linux":
        raise EngineUnavailable(f"a Podman engine needs Linux, this is {sys.platform}")
    missing = sorted({pkg for cmd, pkg in PACKAGES.items() if _find(cmd) is None})
    if not missing:
        return
    if os.geteuid() != 0:
        raise EngineUnavailable(f"packages {', '.join(missing)} are missing and installing "
                                "them (and running a rootful engine) needs root")
    if shutil.which("apt-get") is None:
        raise EngineUnavailable(f"packages {', '.join(missing)} are missing and there is no apt-get")
    log(f"engine: installing {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        done = subprocess.run(["nice", "-n", "10", *args], capture_output=True, text=True,
                              env=env, timeout=900)
        if done.returncode != 0:
            raise EngineUnavailable(f"`{' '.join(args)}` failed: {done.stderr.strip()[-800:]}")


class HealthChecks(threading.Thread):
    """Runs every running container's health check at its interval, as dockerd does.

    Podman hands that schedule to systemd timers; without systemd (as here)
    no check would ever run and every `service_healthy` condition would wait
    forever. The first check of a container runs one interval after it is
    first seen running, later ones one interval after the previous one.
    """

    POLL_S = 2.0
    DEFAULT_INTERVAL_S = 30.0

    def __init__(self, engine: "Engine") -> None:
        super().__init__(name="podman-health-checks", daemon=True)
        self.engine = engine
        self.stopped = threading.Event()
        self.due: dict[str, float] = {}
        self._client = None

    def _running_with_checks(self) -> dict[str, float]:
        """Container id -> check interval (s) of every running container with a check."""
        import docker
        import requests

        if self._client is None:
            self._client = self.engine.docker_client()
        api = self._client.api
        try:
            listed = api.containers(filters={"health": ["starting", "healthy", "unhealthy"]})
            intervals = {}
            for container in listed:
                check = api.inspect_container(container["Id"])["Config"].get("Healthcheck") or {}
                seconds = (check.get("Interval") or 0) / 1e9
                intervals[container["Id"]] = seconds or self.DEFAULT_INTERVAL_S
            return intervals
        except (docker.errors.DockerException, requests.RequestException):
            return {}  # e.g. a container gone between list and inspect: next round

    def run(self) -> None:
        while not self.stopped.wait(self.POLL_S):
            intervals = self._running_with_checks()
            now = time.monotonic()
            self.due = {cid: due for cid, due in self.due.items() if cid in intervals}
            for cid, interval in intervals.items():
                due = self.due.setdefault(cid, now + interval)
                if now >= due and not self.stopped.is_set():
                    self.engine.podman("healthcheck", "run", cid, check=False, timeout=120)
                    self.due[cid] = time.monotonic() + interval

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=30)
        if self._client is not None:
            self._client.close()


class Engine:
    """A running `podman system service` on a private store.

    `docker_host` is the `unix://` URL of its Docker-compatible API; `env`
    is the environment that points the podman CLI, the docker SDK and the
    Compose binary at it.
    """

    def __init__(self, root: Path, log) -> None:
        self.root = root
        self.log = log
        key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
        # runtime state (pid files, locks) on a path the store was made with, outside the cache
        self.state = Path("/run") / f"expaudit-engine-{key}"
        self.socket = self.state / "api.sock"
        self.conf = root / "containers.conf"
        self.storage_conf = root / "storage.conf"
        self._lock_file = None
        self._service: subprocess.Popen | None = None
        self._health: HealthChecks | None = None

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def env(self) -> dict[str, str]:
        return {"CONTAINERS_CONF": str(self.conf), "CONTAINERS_STORAGE_CONF": str(self.storage_conf),
                "DOCKER_HOST": self.docker_host}

    def podman(self, *args: str, timeout: float = 600, check: bool = True,
               nice: bool = False) -> subprocess.CompletedProcess:
        """Run the podman CLI on this engine's store."""
        command = (["nice", "-n", "10"] if nice else []) + [_find("podman") or "podman", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})
        if check and done.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)} failed ({done.returncode}):\n"
                               f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def _lock(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.root / "engine.lock", "w")  # noqa: SIM115 (held until stop)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EngineUnavailable(f"another test session held the engine cache "
                                            f"{self.root} for {LOCK_WAIT_S} s") from None
                time.sleep(2)

    def _reset_stale_state(self) -> None:
        """Stop a service an interrupted session left, and forget runtime state of an earlier boot."""
        pid_file = self.state / "service.pid"
        if pid_file.exists():
            try:
                pid = int(pid_file.read_text())
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"system\0service" in cmdline and str(self.socket).encode() in cmdline:
                    os.kill(pid, 15)
                    time.sleep(1)
            except (ValueError, OSError):
                pass
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        marker = self.state / "boot_id"
        if marker.exists() and marker.read_text().strip() != boot:
            shutil.rmtree(self.state, ignore_errors=True)
        self.state.mkdir(parents=True, exist_ok=True)
        marker.write_text(boot)

    def start(self) -> "Engine":
        self._lock()
        self._reset_stale_state()
        self.conf.write_text(CONTAINERS_CONF.format(tmp_dir=self.state / "libpod"))
        self.storage_conf.write_text(STORAGE_CONF.format(graphroot=self.root / "storage",
                                                         runroot=self.state / "storage"))
        self.socket.unlink(missing_ok=True)
        with open(self.root / "service.log", "w") as service_log:  # the child keeps its own copy
            self._service = subprocess.Popen(
                [_find("podman") or "podman", "system", "service", "--time=0", self.docker_host],
                stdout=service_log, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                start_new_session=True, cwd=self.state)  # conmon drops files in its cwd
        (self.state / "service.pid").write_text(str(self._service.pid))
        deadline = time.monotonic() + START_WAIT_S
        while not self.socket.exists():
            if self._service.poll() is not None or time.monotonic() > deadline:
                tail = (self.root / "service.log").read_text()[-2000:]
                self.stop()
                raise EngineUnavailable(f"podman system service did not start:\n{tail}")
            time.sleep(0.1)
        self._clean()
        probe = self.podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
        if probe.returncode != 0:
            self.stop()
            raise EngineUnavailable(f"podman info failed: {probe.stderr.strip()[-800:]}")
        self._health = HealthChecks(self)
        self._health.start()
        return self

    def _clean(self) -> None:
        """Remove what an earlier session left running or mounted; images stay (the
        build cache too) unless the disk runs short of `KEEP_FREE_BYTES`."""
        self.podman("rm", "--all", "--force", "--time", "0", check=False, timeout=300)
        self.podman("volume", "prune", "--force", check=False)
        self.podman("network", "prune", "--force", check=False)
        if shutil.disk_usage(self.root).free < KEEP_FREE_BYTES:
            self.log("engine: disk short of space, removing untagged images and build cache")
            self.podman("image", "prune", "--force", check=False, timeout=900)

    def docker_client(self):
        """A docker SDK client on this engine's API socket."""
        import docker

        return docker.DockerClient(base_url=self.docker_host, timeout=120)

    def stop(self) -> None:
        if self._health is not None:
            self._health.stop()
            self._health = None
        if self._service is not None and self._service.poll() is None:
            self._clean()
            self._service.terminate()
            try:
                self._service.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._service.kill()
                self._service.wait(timeout=10)
        self._service = None
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


_SHARED: dict[str, object] = {}


def shared_engine(log=print) -> Engine:
    """One engine per test process, started on first use and stopped at exit.

    Raises `EngineUnavailable` (the same reason on every call) when none can be started.
    """
    if "engine" in _SHARED:
        return _SHARED["engine"]  # type: ignore[return-value]
    if "error" in _SHARED:
        raise _SHARED["error"]  # type: ignore[misc]
    started = time.monotonic()
    try:
        ensure_packages(log)
        engine = Engine(cache_dir(), log).start()
    except EngineUnavailable as exc:
        _SHARED["error"] = exc
        raise
    import atexit

    atexit.register(engine.stop)
    log(f"engine: podman serving the Docker API after {time.monotonic() - started:.1f} s")
    _SHARED["engine"] = engine
    return engine
