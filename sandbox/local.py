"""A selector sandbox that needs no container engine: Linux namespaces, rlimits, a non-root uid.

The "image" is a selector directory holding `selector.py`, run read-only at /selector by
this project's interpreter (or `spec.command`) behind `sandbox.nsinit`, its PID 1: no
network, a fresh root, a uid of its own per run, a cgroup for the whole run (else a
single process), an environment built from nothing, and death with the starting thread.

A sandbox that cannot be built, or whose binds, /input or /output would touch a path the
service protects (`protected`, checked before every run), ends `setup_failed`, the
service's failure, with a reason naming no host path. Requires root (or CAP_SYS_ADMIN)
and util-linux. Details: docs/sandbox.md; limits: docs/selector_protocol.md ("Limits").
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from sandbox import cgroups, defaults
from sandbox.base import (Limits, Protected, RunResult, RunSpec, RunStatus,
                                 SandboxConfigError, TailBuffer, check_io_dirs, classify_exit,
                                 exposure_refusal, sandbox_env)
from sandbox.workdir import WorkerDir

log = logging.getLogger(__name__)

NSINIT = Path(__file__).with_name("nsinit.py")
SELECTOR_ENTRY = "selector.py"
"""File a selector directory must hold when the spec gives no command."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32")
SYSTEM_FILES = ("/etc/ld.so.cache",)
STATUS_BYTES = 1 << 20
SANDBOX_PATHS = ("/input", "/output", "/selector", "/proc", "/dev", "/etc")
"""Places inside the sandbox that an interpreter bind may not land in."""


def directory_digest(path: Path) -> str:
    """sha256 over a directory tree (relative paths, exec bits, contents, link targets).

    The local backend's equivalent of an image digest: the report records
    exactly which selector code ran.
    """
    digest = hashlib.sha256()
    root = Path(path)
    for item in sorted(root.rglob("*")):
        rel = item.relative_to(root).as_posix()
        if item.is_symlink():
            digest.update(f"L\0{rel}\0{os.readlink(item)}\0".encode())
        elif item.is_file():
            executable = "x" if os.access(item, os.X_OK) else "-"
            digest.update(f"F\0{rel}\0{executable}\0".encode())
            digest.update(hashlib.sha256(item.read_bytes()).digest())
    return "sha256:" + digest.hexdigest()


_PROBE = ("import json, os, site, sys; print(json.dumps([sys.prefix, sys.base_prefix, "
          "[p for p in site.getsitepackages() if os.path.isdir(p)]]))")
SITE_CHECK = "import sys; sys.exit(any(p not in sys.path for p in sys.argv[1:]))"
"""The interpreter check inside: Python started as the selector is (site on), and
every package directory the interpreter has on the host is on its path there."""


@functools.lru_cache(maxsize=8)
def _interpreter(python: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(sys.prefix and sys.base_prefix, the site-packages directories) of `python`."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        import site

        return (sys.prefix, sys.base_prefix), \
            tuple(p for p in site.getsitepackages() if os.path.isdir(p))
    try:
        done = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True,
                              timeout=30, check=True)
        prefix, base_prefix, sites = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise SandboxConfigError(f"local sandbox: interpreter '{python}' does not run "
                                 f"({type(exc).__name__})") from None
    return (prefix, base_prefix), tuple(sites)


def python_binds(python: str) -> list[tuple[str, str, str]]:
    """Read-only binds (source, target, what) that make `python` and its packages work inside.

    A venv's `bin/python` is a link into the base installation, so both are
    mounted at their own paths (under /tmp too: the sandbox mounts its /tmp
    first and these on top of it).
    """
    prefixes, _ = _interpreter(python)
    paths = {os.path.realpath(p) for p in prefixes} | {os.path.abspath(p) for p in prefixes}
    binds = [(p, p, "the interpreter") for p in sorted(paths) if not p.startswith("/usr/")]
    for _, target, _ in binds:
        if target in ("/", "/tmp") or any(target == place or target.startswith(place + "/")
                                          for place in SANDBOX_PATHS):
            raise SandboxConfigError(f"local sandbox: the interpreter's installation '{target}' "
                                     f"would cover a place of the sandbox")
    return binds


def interpreter_check(python: str) -> list[str]:
    """The command that checks, inside, that `python` starts the way the selector's does
    (no -I, no -S: with its site-packages) and finds every package directory it has
    on the host. A venv whose packages are not visible inside must fail here, as the
    service's failure, not later as the selector's crash on its first import."""
    _, sites = _interpreter(python)
    return [python, "-c", SITE_CHECK, *(os.path.abspath(p) for p in sites)]


class LocalSandbox:
    """Runs a selector directory in Linux namespaces (see the module docstring).

    Args:
        python: interpreter used inside for `selector.py`; defaults to the
            running one. Its installation (and venv) is mounted read-only.
        uid: a fixed unprivileged uid (and gid) for the selector; None (the
            default) draws a fresh one per run from `defaults.SANDBOX_UID_RANGE`,
            so concurrent runs do not share a pids limit.
        cgroup: True: every run in a cgroup of its own (refused where none can
            be made); False: single-process runs; None (the default): a cgroup
            where one can be made, else single-process.
        work_root: where this sandbox's `WorkerDir` is claimed
            (default `sandbox.workdir.base_dir()`); refused unless only
            this user can write it (`sandbox.workdir.secure_base`).
        protected: host paths no run may expose (`base.Protected`), given by
            the service from its configuration; a run that would expose one
            ends `setup_failed` before anything starts.
    """

    def __init__(self, *, python: str | None = None, uid: int | None = None,
                 cgroup: bool | None = None, work_root: Path | None = None,
                 protected: tuple[Protected, ...] | list[Protected] = ()) -> None:
        if uid is not None and (isinstance(uid, bool) or not isinstance(uid, int) or uid <= 0):
            raise SandboxConfigError(f"local sandbox: uid {uid!r} must be a positive integer")
        self.uid = uid
        for tool in ("unshare", "setpriv"):
            if shutil.which(tool) is None:
                raise SandboxConfigError(f"local sandbox: the '{tool}' program is not installed")
        self.python = python or sys.executable
        self.protected = tuple(protected)
        self.python_binds = python_binds(self.python)
        self.interpreter_check = interpreter_check(self.python)
        found = cgroups.available() if cgroup is not False else None
        if cgroup and found is None:
            raise SandboxConfigError("local sandbox: no cgroup with memory, pids and cpu "
                                     "controllers can be made on this host")
        if cgroup is None and found is None:
            log.warning("local sandbox: no cgroup can be made here; selector runs are "
                        "single-process so that their memory and CPU limits hold")
        self.cgroup = found is not None
        self.workdir = WorkerDir.claim(work_root)
        self._finalizer = weakref.finalize(self, self.workdir.close)

    def close(self) -> None:
        """Remove this sandbox's work directory (runs in progress must have ended)."""
        self._finalizer()

    def run(self, spec: RunSpec) -> RunResult:
        """Run the selector; raises only for a spec that cannot be run at all."""
        selector_dir = self._check_spec(spec)
        digest = directory_digest(selector_dir)
        if spec.limits.gpu:
            return RunResult(RunStatus.SETUP_FAILED, "the local sandbox has no GPU; run this "
                             "setting on a Docker runner with a GPU", None, "", "", 0.0, digest)
        refused = exposure_refusal(self.exposed(spec, selector_dir), self.protected)
        if refused is not None:
            reason, source, guarded = refused
            log.error("local sandbox: run refused: %s (%s holds or lies in %s)", reason, source,
                      guarded)
            return RunResult(RunStatus.SETUP_FAILED, f"could not build the sandbox: {reason}",
                             None, "", "", 0.0, digest)
        mountpoint = self.workdir.mkdtemp("sandbox-")
        try:
            return self._run(spec, selector_dir, digest, str(mountpoint))
        finally:
            os.rmdir(mountpoint)

    def _check_spec(self, spec: RunSpec) -> Path:
        selector_dir = Path(spec.image)
        if not selector_dir.is_dir():
            raise SandboxConfigError(
                f"run spec field 'image': value '{spec.image}' is not a selector directory")
        if spec.command is None and not (selector_dir / SELECTOR_ENTRY).is_file():
            raise SandboxConfigError(f"run spec field 'image': '{spec.image}' has no "
                                     f"{SELECTOR_ENTRY} and the spec gives no command")
        check_io_dirs(spec)
        return selector_dir.resolve()

    def _ro_binds(self, spec: RunSpec, selector_dir: Path) -> list[tuple[str, str, str]]:
        """The read-only binds of a run: (host source, target inside, what it is)."""
        ro_binds = [("/usr", "/usr", "/usr")] + list(self.python_binds)
        ro_binds += [(f, f, "a system file") for f in SYSTEM_FILES if os.path.exists(f)]
        ro_binds += [(str(selector_dir), "/selector", "/selector"),
                     (str(spec.input_dir.resolve()), "/input", "/input")]
        return ro_binds

    def exposed(self, spec: RunSpec, selector_dir: Path) -> list[tuple[str, str]]:
        """(host path, what it is) of every place a run of `spec` lets the selector see or
        write: its read-only binds and the directory /output is copied to."""
        names = {"the interpreter": "the interpreter's installation", "/usr": "the bind of /usr",
                 "/selector": "the selector directory", "/input": "the /input directory"}
        places = [(source, names.get(what, what)) for source, _, what in
                  self._ro_binds(spec, selector_dir)]
        return places + [(str(spec.output_dir.resolve()), "the /output directory")]

    def effective_limits(self, limits: Limits) -> Limits:
        """The limits a run really gets: without a cgroup, one process with one thread,
        which cannot use more than one CPU (so numpy and torch are told 1 thread)."""
        if self.cgroup:
            return limits
        return dataclasses.replace(limits, pids=1, cpus=min(limits.cpus, 1.0))

    def _config(self, spec: RunSpec, selector_dir: Path, mountpoint: str, status_fd: int,
                cpus: list[int], group: cgroups.RunCgroup | None) -> dict:
        limits = self.effective_limits(spec.limits)
        low, high = defaults.SANDBOX_UID_RANGE
        uid = self.uid if self.uid is not None else low + secrets.randbelow(high - low)
        ro_binds = self._ro_binds(spec, selector_dir)
        symlinks = [(p, os.readlink(p)) for p in SYSTEM_LINKS if os.path.islink(p)]
        command = list(spec.command or (self.python, f"/selector/{SELECTOR_ENTRY}"))
        return {
            "root": mountpoint, "ro_binds": ro_binds, "symlinks": symlinks,
            "devices": [d for d in DEVICES if os.path.exists(d)],
            "uid": uid, "gid": uid, "command": command,
            "env": sandbox_env(dataclasses.replace(spec, limits=limits)),
            "interpreter_check": self.interpreter_check,
            "setup_seconds": defaults.SETUP_SECONDS,
            "tmp_bytes": limits.tmp_bytes, "output_bytes": limits.output_bytes,
            "wall_seconds": limits.wall_seconds, "cpus": cpus,
            "cgroup_procs": group.procs_files if group else [],
            "rlimits": {"AS": limits.memory_bytes, "NPROC": limits.pids,
                        "FSIZE": limits.output_bytes, "NOFILE": defaults.OPEN_FILES, "CORE": 0,
                        "CPU": int(limits.cpus * limits.wall_seconds) + 1},
            "host_output": str(spec.output_dir.resolve()), "status_fd": status_fd,
        }

    def _run(self, spec: RunSpec, selector_dir: Path, digest: str, mountpoint: str) -> RunResult:
        limits = spec.limits
        cpus = sorted(os.sched_getaffinity(0))[:limits.cpu_count]
        name = cgroups.run_name()
        group = None
        if self.cgroup:
            try:
                group = cgroups.RunCgroup.create(name, memory_bytes=limits.memory_bytes,
                                                 pids=limits.pids, cpus=limits.cpus, cpu_list=cpus)
            except cgroups.CgroupError as exc:
                return RunResult(RunStatus.SETUP_FAILED, f"could not build the sandbox: "
                                 f"{exc.strerror}", None, "", "", 0.0, digest)
        try:
            return self._supervise(spec, selector_dir, digest, mountpoint, name, cpus, group)
        finally:
            if group is not None:
                try:
                    group.remove()
                except cgroups.CgroupError as exc:  # an empty leftover; the result stands
                    log.warning("local sandbox: %s", exc.strerror)

    def _supervise(self, spec: RunSpec, selector_dir: Path, digest: str, mountpoint: str,
                   name: str, cpus: list[int], group: cgroups.RunCgroup | None) -> RunResult:
        read_fd, write_fd = os.pipe()
        cfg = self._config(spec, selector_dir, mountpoint, write_fd, cpus, group)
        # setpriv --pdeathsig: the sandbox is killed when the thread that started it dies
        # (a killed worker), and --kill-child takes the PID namespace with it.
        argv = ["setpriv", "--pdeathsig", "KILL", "--",
                "unshare", "--net", "--mount", "--pid", "--ipc", "--uts", "--fork",
                "--kill-child=SIGKILL", "--", sys.executable, "-I", "-S", str(NSINIT)]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(write_fd,),
                                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                                start_new_session=True)
        os.close(write_fd)
        out, err, status = TailBuffer(), TailBuffer(), TailBuffer(STATUS_BYTES)
        readers = [_drain(proc.stdout, out), _drain(proc.stderr, err),
                   _drain(os.fdopen(read_fd, "rb"), status)]
        budget = spec.limits.wall_seconds + defaults.SETUP_SECONDS + defaults.KILL_GRACE_SECONDS
        backstop, record = False, None
        try:
            record = self.workdir.record_sandbox(name, proc.pid, group.paths if group else ())
            try:
                proc.stdin.write(json.dumps(cfg).encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass  # the sandbox died at once; its stderr says why
            proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            backstop = True
        finally:
            if proc.poll() is None:  # also on KeyboardInterrupt: never leave a sandbox behind
                os.killpg(proc.pid, signal.SIGKILL)  # --kill-child takes the namespace with it
                proc.wait()
            for reader in readers:
                reader.join()
            if record is not None:
                self.workdir.forget(record)
        oom_killed = group is not None and group.oom_killed()
        return _result(spec, self.effective_limits(spec.limits), status.text(), out.text(),
                       err.text(), digest, backstop, oom_killed)


def _drain(stream, buffer: TailBuffer) -> threading.Thread:
    def pump() -> None:
        with stream:
            while chunk := stream.read1(65536):
                buffer.feed(chunk)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def _result(spec: RunSpec, limits: Limits, status_text: str, stdout: str, stderr: str,
            digest: str, backstop: bool, oom_killed: bool) -> RunResult:
    """Turn nsinit's JSON status into a RunResult.

    When the sandbox could not be built the selector never ran: what its
    streams hold is the sandbox's own output (which may name host paths), so
    it is not shown.
    """
    try:
        status = json.loads(status_text)
    except json.JSONDecodeError:
        status = None
    if backstop:
        return RunResult(RunStatus.TIMEOUT, "the sandbox was killed by the host after its time "
                         "budget", None, stdout, stderr, spec.limits.wall_seconds, digest)
    if status is None:
        return RunResult(RunStatus.SETUP_FAILED, "could not build the sandbox: it ended with no "
                         "status", None, "", "", 0.0, digest)
    if status["error"] and status["phase"] == "setup":
        return RunResult(RunStatus.SETUP_FAILED, f"could not build the sandbox: {status['error']}",
                         None, "", "", 0.0, digest)
    result_status, reason = classify_exit(
        exit_code=status["exit_code"], timed_out=status["timed_out"], limits=limits,
        stderr_tail=stderr, output_full=status["output_full"], oom_killed=oom_killed)
    if result_status is RunStatus.OUTPUT_LIMIT and status.get("output_cap") == "files":
        reason = reason.replace(f"its size cap of {limits.output_bytes} bytes",  # H3, issue 30.6
                                f"its cap of {status['output_files']} files and folders", 1)
    if status["error"] and result_status is RunStatus.OK:
        result_status, reason = RunStatus.OUTPUT_INVALID, \
            f"could not copy /output out of the sandbox: {status['error']}"
    elif status["skipped"] and result_status is RunStatus.OK:
        reason += f"; not copied from /output: {', '.join(status['skipped'][:5])}"
    return RunResult(result_status, reason, status["exit_code"], stdout, stderr,
                     status["wall_seconds"], digest)
