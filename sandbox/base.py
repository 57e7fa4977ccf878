"""One interface for running a submitted selector: `SelectorSandbox.run(RunSpec) -> RunResult`.

Two backends implement it (`sandbox.local`, Linux namespaces, no
engine; `sandbox.docker_backend`, production). Both take the same
spec, enforce the same limits and report with the same statuses, so the
service does not care which one ran a selector.
"""

from __future__ import annotations

import math
import os
import re
import signal
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from expaudit.errors import ExpauditError, InvalidInput
from expaudit.numerics import kernel_env
from sandbox import defaults


class SandboxError(ExpauditError):
    """Base of the sandbox's own errors (bad settings, cgroups, /input data), so a caller
    can catch them all; each also derives from its kind in the project's tree (a bad setting
    is the caller's, a cgroup or /input failure the machinery's) and from the built-in it
    stands for."""


class SandboxConfigError(SandboxError, InvalidInput, ValueError):
    """A run spec or backend setting that cannot be run; names the field and value."""


class RunStatus(str, Enum):
    """How a selector run ended."""

    OK = "ok"
    """Exited 0; /output is ready to be read."""
    TIMEOUT = "timeout"
    """Killed at the wall-clock (or CPU-time) limit."""
    OOM = "oom"
    """Ran out of its memory limit."""
    PIDS_LIMIT = "pids_limit"
    """Could not create a process or thread: the pids limit was reached."""
    OUTPUT_LIMIT = "output_limit"
    """Filled /output (or one file) to its size cap."""
    CRASHED = "crashed"
    """Exited non-zero or was killed by a signal for another reason."""
    OUTPUT_INVALID = "output_invalid"
    """Exited 0 but /output/scores.csv is missing, unsafe or not a valid scores table."""
    SETUP_FAILED = "setup_failed"
    """The sandbox could not be built (image missing, engine error); the selector never ran."""


@dataclass(frozen=True)
class Limits:
    """What one selector run may use; defaults in `sandbox.defaults`.

    Attributes
    ----------
    wall_seconds : wall-clock limit; the whole sandbox is killed at it.
    memory_bytes : memory limit.
    pids : processes and threads the selector may have at once.
    cpus : CPU share (fractional CPUs).
    output_bytes : size cap of /output.
    tmp_bytes : size of the writable /tmp.
    gpu : the run asks for a GPU (granted only where the backend allows it).
    """

    wall_seconds: float = defaults.WALL_SECONDS
    memory_bytes: int = defaults.MEMORY_BYTES
    pids: int = defaults.PIDS
    cpus: float = defaults.CPUS
    output_bytes: int = defaults.OUTPUT_BYTES
    tmp_bytes: int = defaults.TMP_BYTES
    gpu: bool = False

    def __post_init__(self) -> None:
        minimums = {"wall_seconds": 0.1, "memory_bytes": 16 * defaults.MIB, "pids": 1,
                    "cpus": 0.01, "output_bytes": 4096, "tmp_bytes": 4096}
        for name, low in minimums.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < low:
                raise SandboxConfigError(
                    f"limits field '{name}': value {value!r} must be a number >= {low}")

    @property
    def cpu_count(self) -> int:
        """Whole CPUs to pin the selector to (at least one)."""
        return max(1, math.ceil(self.cpus))


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
RESERVED_ENV = frozenset({"PATH", "HOME", "TMPDIR", "EXPAUDIT_INPUT", "EXPAUDIT_OUTPUT"})
"""Variables the sandbox sets itself; a spec may not override them."""


@dataclass(frozen=True)
class RunSpec:
    """One selector run.

    Attributes
    ----------
    image : a Docker image reference (Docker backend) or a selector
        directory holding `selector.py` (local backend).
    input_dir : host directory mounted read-only at /input (`protocol.prepare_input`).
    output_dir : host directory that receives what the selector wrote to /output;
        must exist and be empty.
    limits : the run's limits.
    command : argv inside the sandbox; None runs the image's entry point.
    env : extra environment variables (names in upper case); nothing else
        from the host environment reaches the selector.
    """

    image: str
    input_dir: Path
    output_dir: Path
    limits: Limits = field(default_factory=Limits)
    command: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_dir", Path(self.input_dir))
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        if not isinstance(self.image, str) or not self.image:
            raise SandboxConfigError(f"run spec field 'image': value {self.image!r} is empty")
        if self.command is not None:
            object.__setattr__(self, "command", tuple(self.command))
            if not self.command or not all(isinstance(a, str) for a in self.command):
                raise SandboxConfigError(
                    f"run spec field 'command': value {self.command!r} must be non-empty strings")
        for name, value in self.env.items():
            if not _ENV_NAME.fullmatch(name) or name in RESERVED_ENV:
                raise SandboxConfigError(
                    f"run spec field 'env': name {name!r} is not an allowed variable name")
            if not isinstance(value, str) or "\0" in value:
                raise SandboxConfigError(f"run spec field 'env': value of {name!r} must be text")
        object.__setattr__(self, "env", dict(self.env))


@dataclass(frozen=True)
class RunResult:
    """How a selector run ended, for the submission record and the owner.

    Attributes
    ----------
    status : the outcome class.
    reason : one sentence saying what happened (shown to the owner).
    exit_code : the selector's exit code; negative for a signal; None if it never ran.
    stdout_tail, stderr_tail : the last `defaults.LOG_TAIL_BYTES` of each stream.
    wall_seconds : time from start to end of the selector.
    image_digest : content digest of what ran (Docker image digest, or the
        sha256 of the local selector directory).
    """

    status: RunStatus
    reason: str
    exit_code: int | None
    stdout_tail: str
    stderr_tail: str
    wall_seconds: float
    image_digest: str | None

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    def to_dict(self) -> dict:
        """JSON-ready form for the submission record."""
        return {"status": self.status.value, "reason": self.reason, "exit_code": self.exit_code,
                "stdout_tail": self.stdout_tail, "stderr_tail": self.stderr_tail,
                "wall_seconds": round(self.wall_seconds, 3), "image_digest": self.image_digest}


def check_io_dirs(spec: RunSpec) -> None:
    """The input directory exists and the output directory exists and is empty."""
    if not spec.input_dir.is_dir():
        raise SandboxConfigError(
            f"run spec field 'input_dir': value '{spec.input_dir}' is not a directory")
    if not spec.output_dir.is_dir() or any(spec.output_dir.iterdir()):
        raise SandboxConfigError(f"run spec field 'output_dir': value "
                                 f"'{spec.output_dir}' must be an existing empty directory")


@dataclass(frozen=True)
class Protected:
    """A host path no selector may be given a view of: the service's own state (the store,
    the computed cells, the Redis socket) or data never published (sealed cells).

    Attributes
    ----------
    path : the host path; a directory that does not exist yet (made later by another
        process) counts all the same.
    what : what it is, named in the refusal, which never names a host path.
    if_present : count it only while it exists: a file that is normally absent (sealed
        cells left in the frozen data by an older service).
    """

    path: str
    what: str
    if_present: bool = False


def _forms(path: str) -> set[str]:
    absolute = os.path.abspath(path)
    return {absolute, os.path.realpath(absolute)}


def _within(inner: str, outer: str) -> bool:
    return inner == outer or outer == "/" or inner.startswith(outer + "/")


def exposure_refusal(exposed: Sequence[tuple[str, str]],
                     protected: Sequence[Protected]) -> tuple[str, str, str] | None:
    """The first protected path a sandbox would expose: (reason, exposed host path, protected
    host path), or None when there is none.

    `exposed` holds (host path, what it is) for every place a selector would see or write
    (bind sources, /input, /output). A protected path is exposed when one of them contains
    it or lies inside it, as written or with its links resolved. The reason names the two
    things, never a path: it is shown to the submitter; the paths are for the operator's log.
    """
    for guarded in protected:
        if guarded.if_present and not os.path.lexists(guarded.path):
            continue
        targets = _forms(guarded.path)
        for source, what in exposed:
            sources = _forms(source)
            if any(_within(t, s) for t in targets for s in sources):
                return f"{what} would show the selector {guarded.what}", source, guarded.path
            if any(_within(s, t) for t in targets for s in sources):
                return f"{what} lies inside {guarded.what}", source, guarded.path
    return None


class SelectorSandbox(Protocol):
    """A backend that runs one selector under a `RunSpec`'s limits."""

    def run(self, spec: RunSpec) -> RunResult:
        """Run the selector; never raises for anything the selector does."""
        ...


class TailBuffer:
    """Keeps the last `cap` bytes of a stream, counting what it dropped."""

    def __init__(self, cap: int = defaults.LOG_TAIL_BYTES) -> None:
        self.cap = cap
        self.dropped = 0
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._data += chunk
        excess = len(self._data) - self.cap
        if excess > 0:
            del self._data[:excess]
            self.dropped += excess

    def text(self) -> str:
        body = self._data.decode("utf-8", errors="replace")
        if self.dropped:
            return f"[... {self.dropped} earlier bytes dropped ...]\n{body}"
        return body


def sandbox_env(spec: RunSpec, *, input_path: str = "/input",
                output_path: str = "/output") -> dict[str, str]:
    """The complete environment of a selector: fixed entries plus the spec's extras.

    Built from nothing, never from the host environment, so no token, key or
    password of the service can reach a submitted program. OpenBLAS and torch
    get the kernels the service itself computes with (`expaudit.numerics`), so
    a selector's numpy and torch scores match the service's own to the bit.
    """
    threads = str(spec.limits.cpu_count)
    env = {
        "PATH": defaults.SANDBOX_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
        "EXPAUDIT_INPUT": input_path, "EXPAUDIT_OUTPUT": output_path,
        **kernel_env(),
    }
    env.update(spec.env)
    return env


_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc",
                   "out of memory", "failed to map segment")
_PIDS_MARKERS = ("BlockingIOError", "Resource temporarily unavailable",
                 "can't start new thread", "fork: retry")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def classify_exit(*, exit_code: int | None, timed_out: bool, limits: Limits,
                  stderr_tail: str = "", output_full: bool = False,
                  oom_killed: bool = False) -> tuple[RunStatus, str]:
    """Status and reason for a finished selector run (pure).

    `exit_code` is negative for a signal (subprocess convention). Memory and
    pids exhaustion inside the local sandbox show up as a failed allocation or
    fork, so the selector's own error text is used to name them; it only ever
    changes how the selector's own failure is labelled.
    """
    last = _last_line(stderr_tail)
    tail = f" (last error line: {last})" if last else ""
    if timed_out:
        return RunStatus.TIMEOUT, (f"killed at the wall-clock limit of "
                                   f"{limits.wall_seconds:g} s")
    if output_full or exit_code == -signal.SIGXFSZ:
        return RunStatus.OUTPUT_LIMIT, (f"/output reached its size cap of "
                                        f"{limits.output_bytes} bytes{tail}")
    if exit_code == -signal.SIGXCPU:
        return RunStatus.TIMEOUT, (f"killed at the CPU-time limit of "
                                   f"{limits.cpus:g} CPUs x {limits.wall_seconds:g} s")
    if exit_code == 0:
        return RunStatus.OK, "exited 0"
    if oom_killed or any(m in stderr_tail for m in _MEMORY_MARKERS):
        return RunStatus.OOM, f"ran out of its memory limit of {limits.memory_bytes} bytes{tail}"
    if any(m in stderr_tail for m in _PIDS_MARKERS):
        return RunStatus.PIDS_LIMIT, (f"could not start a process or thread: pids limit of "
                                      f"{limits.pids} reached{tail}")
    if exit_code is None:
        return RunStatus.CRASHED, f"ended without an exit status{tail}"
    if exit_code < 0:
        name = signal.Signals(-exit_code).name if -exit_code in signal.valid_signals() \
            else str(-exit_code)
        return RunStatus.CRASHED, f"killed by signal {name}{tail}"
    return RunStatus.CRASHED, f"exited with code {exit_code}{tail}"
