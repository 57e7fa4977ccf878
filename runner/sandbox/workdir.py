"""A worker's own directory for its selector runs, and the clean-up of dead workers' ones.

A worker killed mid-run (kill -9, the memory killer, a lost host) cannot
remove its runs' temporary trees or stop their sandboxes. So each process
that runs selectors claims a directory under `base_dir()` and holds an
exclusive `flock` on its `lock` file for as long as it lives; the kernel
drops the lock when the process dies, however it dies. The directory holds

- `runs/`: the temporary trees of its runs (/input, /output, the sandbox root);
- `sandboxes/<run>.json`: one record per running sandbox: the host pid of
  its outermost process, that process's start time (so a reused pid is never
  signalled) and the run's cgroup directories.

`claim` first reaps: every directory whose lock is free belongs to a dead
process; its recorded sandboxes are killed (the cgroup's processes, then the
process group of the recorded pid) and the directory is removed. Records are
written by the service only (never inside a tree a selector writes to).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import shutil
import signal
import tempfile
from pathlib import Path

from runner.sandbox import cgroups

log = logging.getLogger(__name__)

PREFIX = "w-"
"""Names of claimed directories (a claim in progress is named `.new-*` and never reaped)."""


def base_dir() -> Path:
    """Where workers' directories live: `<temp dir>/expaudit-workers` (root only)."""
    return Path(tempfile.gettempdir()) / "expaudit-workers"


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
        """Reap dead workers' directories under `base`, then claim a new one."""
        base = Path(base) if base is not None else base_dir()
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    directories; returns the names removed."""
    base = Path(base) if base is not None else base_dir()
    reaped = []
    try:
        entries = sorted(base.iterdir())
    except FileNotFoundError:
        return reaped
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
