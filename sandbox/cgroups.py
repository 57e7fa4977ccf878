"""One selector run's cgroup: memory, processes and CPU bounded for the whole run.

Rlimits count per process (64 processes under RLIMIT_AS hold 64 times the memory limit,
and a child can undo its CPU affinity), so a cgroup bounds every process of the run
together; a selector cannot leave it. It is made under the worker's own cgroup, never
above it; in cgroup v2 the worker first moves itself into a leaf `expaudit-worker`
(`_v2_plan`, `_delegate`). Where memory, pids and cpu cannot be had (`available()`),
runs are single-process. Only the selector's processes join: the sandbox's PID 1 stays
outside, so the memory killer never picks it. v1/v2 files: docs/sandbox.md.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from expaudit.errors import InternalError
from sandbox.base import SandboxError

REQUIRED = ("memory", "pids", "cpu")
"""Controllers a run's cgroup must have; cpuset is used where present."""
CPU_PERIOD_US = 100_000
"""CFS period the CPU quota is a share of."""
REMOVE_SECONDS = 5.0
"""How long `remove` waits for killed processes to leave the cgroup."""
WORKER_LEAF = "expaudit-worker"
"""v2: the leaf cgroup the worker's processes move into, so that its own can delegate."""
DELEGATE_TRIES = 10
RUN_NAME = re.compile(r"expaudit-run-[0-9a-f]{12}")
"""Names of runs' cgroups (`run_name`); clean-up removes no other cgroup."""


def run_name() -> str:
    """A fresh name for a run's cgroup (and its sandbox record)."""
    return f"expaudit-run-{secrets.token_hex(6)}"


class CgroupError(SandboxError, InternalError, OSError):
    """A cgroup could not be made, set or removed (names the step, never a host path)."""


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path ('' is the v2 hierarchy)."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _mounts() -> dict[str, Path]:
    """controller -> mount point of its v1 hierarchy; '' -> the v2 mount point."""
    found: dict[str, Path] = {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fstype, options = line.split()[:4]
        if fstype == "cgroup2":
            found.setdefault("", Path(point))
        elif fstype == "cgroup":
            for option in options.split(","):
                found.setdefault(option, Path(point))
    return found


def _layout(own: dict[str, str] | None = None, mounts: dict[str, Path] | None = None, *,
            delegate: bool = False) -> tuple[int, dict[str, Path]] | None:
    """(version, controller -> parent directory for run cgroups), or None.

    `own` and `mounts` default to this process's (`_own_paths`, `_mounts`). In v2
    the worker may first have to move into a leaf of its own cgroup (`_v2_plan`);
    `delegate` does that move, without it the answer is where runs will go.
    """
    own = _own_paths() if own is None else own
    mounts = _mounts() if mounts is None else mounts
    if all(name in mounts and name in own for name in REQUIRED):
        parents = {name: mounts[name] / own[name].lstrip("/") for name in REQUIRED}
        if "cpuset" in mounts and "cpuset" in own:
            parents["cpuset"] = mounts["cpuset"] / own["cpuset"].lstrip("/")
        return 1, parents
    if "" in mounts and "" in own:
        plan = _v2_plan(mounts[""] / own[""].lstrip("/"))
        if plan is None:
            return None
        parent, names, move = plan
        if move and delegate:
            _delegate(parent, names)
        return 2, {name: parent for name in names}
    return None


def _v2_plan(own_dir: Path) -> tuple[Path, tuple[str, ...], bool] | None:
    """Where a v2 worker whose cgroup is `own_dir` makes its runs' cgroups: (that
    directory, the controllers they get, whether the worker must first move into the
    leaf `WORKER_LEAF`), or None (then runs are single-process).

    A v2 cgroup that holds processes cannot enable controllers for its children
    (only the root can), so the worker's processes move into `<own>/WORKER_LEAF`
    and `<own>` delegates to its runs, which are its children too. Runs are never
    made above `<own>`: there they would escape the limits put on the worker.
    """
    def has_required(names: set[str]) -> tuple[str, ...] | None:
        if not all(name in names for name in REQUIRED):
            return None
        return REQUIRED + (("cpuset",) if "cpuset" in names else ())

    try:
        if own_dir.name == WORKER_LEAF:  # moved there before (this process or its parent)
            names = has_required(set(_read(own_dir.parent / "cgroup.subtree_control").split()))
            if names:
                return own_dir.parent, names, False
        names = has_required(set(_read(own_dir / "cgroup.subtree_control").split()))
        if names:  # the root cgroup: it may hold processes and delegate
            return own_dir, names, False
        names = has_required(set(_read(own_dir / "cgroup.controllers").split()))
    except OSError:
        return None
    return (own_dir, names, True) if names else None


def _delegate(own_dir: Path, names: tuple[str, ...]) -> None:
    """Enable `names` for the children of `own_dir`; where its processes prevent that
    (EBUSY: any cgroup but the root), first move them into its leaf `WORKER_LEAF`.
    Everything stays under `own_dir`, within its limits."""
    for _ in range(DELEGATE_TRIES):  # a process forked meanwhile makes the write EBUSY again
        try:
            _write(own_dir / "cgroup.subtree_control", " ".join(f"+{n}" for n in names))
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
        leaf = own_dir / WORKER_LEAF
        try:
            os.mkdir(leaf, 0o755)
        except FileExistsError:
            pass
        for pid in _read(own_dir / "cgroup.procs").split():
            try:
                _write(leaf / "cgroup.procs", pid)
            except ProcessLookupError:
                continue
    raise CgroupError(errno.EBUSY, "cannot delegate the worker's cgroup: processes keep "
                                   "joining it")


@dataclass(frozen=True)
class RunCgroup:
    """The cgroup (one directory per v1 hierarchy, one in v2) of one selector run."""

    version: int
    dirs: dict[str, Path]
    """controller -> the run's directory (v2: the same one for every controller)."""

    @property
    def paths(self) -> tuple[str, ...]:
        """The distinct directories, for the worker's record of running sandboxes."""
        return tuple(sorted({str(d) for d in self.dirs.values()}))

    @property
    def procs_files(self) -> list[str]:
        """The `cgroup.procs` files a process writes itself into to join the run."""
        return [f"{p}/cgroup.procs" for p in self.paths]

    @classmethod
    def create(cls, name: str, *, memory_bytes: int, pids: int, cpus: float,
               cpu_list: list[int]) -> RunCgroup:
        """Make the run's cgroup and write its limits; nothing has joined it yet."""
        try:
            layout = _layout(delegate=True)
        except OSError as exc:
            raise CgroupError(exc.errno or errno.EIO, f"cannot delegate the worker's cgroup: "
                                                      f"{exc.strerror}") from None
        if layout is None:
            raise CgroupError(errno.ENOTSUP, "no cgroup with memory, pids and cpu can be made")
        version, parents = layout
        group = cls(version, {c: parent / name for c, parent in parents.items()})
        try:
            for path in group.paths:
                os.mkdir(path, 0o700)
            group._limit(memory_bytes, pids, cpus, cpu_list)
        except OSError as exc:
            group.remove()
            raise CgroupError(exc.errno or errno.EIO,
                              f"cannot set up the run's cgroup: {exc.strerror}") from None
        return group

    def _limit(self, memory_bytes: int, pids: int, cpus: float, cpu_list: list[int]) -> None:
        d = self.dirs
        quota = max(1000, int(cpus * CPU_PERIOD_US))
        cpu_text = ",".join(str(c) for c in cpu_list)
        if self.version == 2:
            _write(d["memory"] / "memory.max", str(memory_bytes))
            if (d["memory"] / "memory.swap.max").exists():
                _write(d["memory"] / "memory.swap.max", "0")
            _write(d["pids"] / "pids.max", str(pids))
            _write(d["cpu"] / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            if "cpuset" in d and cpu_list:
                _write(d["cpuset"] / "cpuset.cpus", cpu_text)
            return
        _write(d["memory"] / "memory.limit_in_bytes", str(memory_bytes))
        if (d["memory"] / "memory.memsw.limit_in_bytes").exists():
            _write(d["memory"] / "memory.memsw.limit_in_bytes", str(memory_bytes))
        _write(d["pids"] / "pids.max", str(pids))
        _write(d["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(d["cpu"] / "cpu.cfs_quota_us", str(quota))
        if "cpuset" in d and cpu_list:
            _write(d["cpuset"] / "cpuset.mems", _read(d["cpuset"].parent / "cpuset.mems"))
            _write(d["cpuset"] / "cpuset.cpus", cpu_text)

    def settings(self) -> dict:
        """The limits as the kernel holds them: memory bytes, pids, CPU share, CPU list."""
        d = self.dirs
        if self.version == 2:
            quota, period = _read(d["cpu"] / "cpu.max").split()
            memory, pids = _read(d["memory"] / "memory.max"), _read(d["pids"] / "pids.max")
            cpus = _read(d["cpuset"] / "cpuset.cpus.effective") if "cpuset" in d else ""
        else:
            quota = _read(d["cpu"] / "cpu.cfs_quota_us")
            period = _read(d["cpu"] / "cpu.cfs_period_us")
            memory = _read(d["memory"] / "memory.limit_in_bytes")
            pids = _read(d["pids"] / "pids.max")
            cpus = _read(d["cpuset"] / "cpuset.cpus") if "cpuset" in d else ""
        return {"memory": int(memory), "pids": int(pids), "cpu_quota": int(quota) / int(period),
                "cpus": _cpu_list(cpus)}

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for exceeding its memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = _read(self.dirs["memory"] / name).splitlines()
        except OSError:
            return False
        counts = dict(line.split() for line in lines if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    def pids(self) -> list[int]:
        """Host pids of the processes in the run's cgroup."""
        found: set[int] = set()
        for path in self.paths:
            try:
                found.update(int(p) for p in _read(Path(path) / "cgroup.procs").split())
            except FileNotFoundError:
                continue
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process of the run until none is left (or `REMOVE_SECONDS`)."""
        deadline = time.monotonic() + REMOVE_SECONDS
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left in the cgroup and remove its directories (missing ones are fine)."""
        self.kill()
        deadline = time.monotonic() + REMOVE_SECONDS
        for path in self.paths:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise CgroupError(exc.errno, f"cannot remove the run's cgroup: "
                                                     f"{exc.strerror}") from None
                    time.sleep(0.01)


def run_parents() -> set[Path]:
    """The directories this process makes its runs' cgroups in (none where it makes none)."""
    try:
        layout = _layout()
    except (OSError, ValueError):
        return set()
    return set(layout[1].values()) if layout else set()


def from_paths(paths: list[str]) -> RunCgroup | None:
    """A run's cgroup again from its recorded directories (for cleaning up after a dead
    worker); None unless every path is a run's cgroup: named like one (`RUN_NAME`) and
    in a directory where this process makes them (`run_parents`). Removing a cgroup
    kills its processes, so no other cgroup of the host may ever get here."""
    parents = run_parents()
    dirs: dict[str, Path] = {}
    for text in paths:
        path = Path(text)
        if not path.is_absolute() or ".." in path.parts or not RUN_NAME.fullmatch(path.name) \
                or path.parent not in parents:
            return None
        dirs[str(path)] = path
    return RunCgroup(0, dirs) if dirs else None


def _cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """'v1' or 'v2' where this process can make a run's cgroup, else None (checked once,
    by making and removing one)."""
    try:
        group = RunCgroup.create(f"expaudit-probe-{os.getpid()}-{secrets.token_hex(3)}",
                                 memory_bytes=64 << 20, pids=4, cpus=1.0,
                                 cpu_list=sorted(os.sched_getaffinity(0))[:1])
        group.remove()
    except (OSError, ValueError):
        return None
    return f"v{group.version}"
