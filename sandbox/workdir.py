"""A worker's own directory for its selector runs, and the clean-up of dead workers' ones.

A worker killed mid-run cannot remove its runs' trees or stop their sandboxes, so each
process that runs selectors claims a directory (its runs' trees and a record per running
sandbox) and holds a `flock` on it while it lives. `claim` first reaps every directory
whose lock is free: it kills the recorded sandboxes and removes the directory. Each
service instance reaps only its own directory (`instance_dir`).

Reaping kills what the records name, so the base directory must be the worker's own
(`secure_base`) and only a run's cgroup is removed (`cgroups.from_paths`).
Layout: docs/sandbox.md; rules: docs/selector_protocol.md ("When a worker dies").
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import stat
import tempfile
from pathlib import Path

from sandbox import cgroups
from sandbox.base import SandboxConfigError

log = logging.getLogger(__name__)

PREFIX = "w-"
"""Names of claimed directories (a claim in progress is named `.new-*` and never reaped)."""


INSTANCE_PREFIX = "i-"
"""Names of the directories of service instances under `base_dir()` (never reaped)."""

RUN_BASE = Path("/run/expaudit-workers")
"""Where root's workers' directories live (/run: only root writes there)."""


def base_dir() -> Path:
    """Where workers' directories live: `/run/expaudit-workers` for root, else
    `<temp dir>/expaudit-workers-<uid>` (a directory per user, never a shared one)."""
    if os.geteuid() == 0 and RUN_BASE.parent.is_dir():
        return RUN_BASE
    return Path(tempfile.gettempdir()) / f"expaudit-workers-{os.geteuid()}"


def instance_dir(key: str, base: Path | None = None) -> Path:
    """The directory of one service instance's workers: `i-<sha256 of key, 16 hex>` under
    `base` (default `base_dir()`). `key` names the instance (the service gives its store's
    location), so every worker and runner of one instance on this host shares it and no
    other instance's does. Made and checked (`secure_base`) by `WorkerDir.claim`."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (Path(base) if base is not None else base_dir()) / f"{INSTANCE_PREFIX}{digest}"


def _refuse(reason: str) -> SandboxConfigError:
    return SandboxConfigError(f"local sandbox: field 'work_root': the directory is refused: "
                              f"{reason}; it must be a directory of this user (uid "
                              f"{os.geteuid()}) with mode 0700")


def secure_base(base: Path) -> Path:
    """Make `base` (mode 0700, like any missing directory above it) if it is missing,
    and return it only if no one but this user can have put anything in it: not a
    symbolic link, owned by this user, mode 0700, and every directory above it owned by
    root or this user and writable by no one else (or sticky, like /tmp, so no one else
    can rename what is in it).

    Raises `SandboxConfigError` (naming the reason, not the path) otherwise.
    """
    base = Path(os.path.abspath(base))
    if not os.path.lexists(base.parent):  # made 0700 too (an instance's directory's parent)
        secure_base(base.parent)
    try:
        os.mkdir(base, 0o700)
        os.chmod(base, 0o700)  # ours, just made: the umask may have taken bits away
    except FileExistsError:
        pass
    info = os.lstat(base)
    if stat.S_ISLNK(info.st_mode):
        raise _refuse("it is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse("it is not a directory")
    if info.st_uid != os.geteuid():
        raise _refuse(f"it belongs to uid {info.st_uid}")
    if stat.S_IMODE(info.st_mode) != 0o700:
        raise _refuse(f"its mode is {stat.S_IMODE(info.st_mode):#o}")
    real_parent = Path(os.path.realpath(base.parent))
    for above in (real_parent, *real_parent.parents):
        info = os.stat(above)
        if info.st_uid not in (0, os.geteuid()):
            raise _refuse(f"a directory above it belongs to uid {info.st_uid}")
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            raise _refuse("a directory above it is writable by others")
    return base


def process_start(pid: int) -> str | None:
    """The start time of `pid` (clock ticks since boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


class WorkerDir:
    """The directory of one live process (see the module docstring)."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._lock_fd = lock_fd

    @classmethod
    def claim(cls, base: Path | None = None) -> WorkerDir:
        """Reap dead workers' directories under `base` (and only there: not in the
        directories of instances, `instance_dir`, below it), then claim a new one."""
        base = secure_base(Path(base) if base is not None else base_dir())
        reap(base)
        staging = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
        fd = os.open(staging / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for sub in ("runs", "sandboxes"):
            (staging / sub).mkdir(mode=0o755)
        path = base / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        staging.rename(path)
        return cls(path, fd)

    def mkdtemp(self, prefix: str) -> Path:
        """A new temporary directory for one run (0755: the selector's uid reads it)."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self.path / "runs"))
        path.chmod(0o755)
        return path

    def record_sandbox(self, name: str, pid: int, cgroup_paths: tuple[str, ...]) -> Path:
        """Note a started sandbox; `forget` it once it is gone."""
        record = self.path / "sandboxes" / f"{name}.json"
        tmp = record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": pid, "start": process_start(pid),
                                   "cgroups": list(cgroup_paths)}))
        tmp.rename(record)
        return record

    @staticmethod
    def forget(record: Path) -> None:
        record.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the directory and drop the lock (the process is done with selectors)."""
        if self._lock_fd < 0:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock_fd)
        self._lock_fd = -1


def _kill_recorded(record: dict) -> None:
    """The sandbox's process group (its PID 1 with it, which ends the whole PID
    namespace), then whatever is left in the run's cgroup."""
    pid = record.get("pid")
    if isinstance(pid, int) and pid > 1 and record.get("start") is not None \
            and process_start(pid) == record["start"]:
        try:
            os.killpg(pid, signal.SIGKILL)  # the sandbox leads its own process group
        except ProcessLookupError:
            pass
    group = cgroups.from_paths(record.get("cgroups") or [])
    if group is not None:
        try:
            group.remove()
        except OSError as exc:
            log.warning("a dead worker's run cgroup was not removed: %s", exc.strerror)


def reap(base: Path | None = None) -> list[str]:
    """Kill the sandboxes of dead workers' directories under `base` and remove the
    directories; returns the names removed. Raises `SandboxConfigError` for a base
    directory that others could have written to (see `secure_base`)."""
    base = Path(base) if base is not None else base_dir()
    reaped = []
    if not os.path.lexists(base):
        return reaped
    base = secure_base(base)
    entries = sorted(base.iterdir())
    for path in entries:
        if not path.name.startswith(PREFIX) or path.is_symlink() or not path.is_dir():
            continue
        try:
            fd = os.open(path / "lock", os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = None  # a claimed directory always has its lock: this one is debris
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its owner is alive
            for record in sorted((path / "sandboxes").glob("*.json")):
                try:
                    _kill_recorded(json.loads(record.read_text()))
                except (OSError, ValueError, AttributeError):
                    continue
            shutil.rmtree(path, ignore_errors=True)
            reaped.append(path.name)
        finally:
            if fd is not None:
                os.close(fd)
    if reaped:
        log.warning("removed %d directories of dead selector workers and stopped their "
                    "sandboxes", len(reaped))
    return reaped
