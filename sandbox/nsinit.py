"""The first process inside the local sandbox's namespaces (PID 1 there).

Started by `sandbox.local` under `setpriv --pdeathsig KILL -- unshare ...` with a JSON
configuration on stdin, it builds a fresh root whose mount table and /proc name no host
path (`build_root`, `PROC_VIEW`), chroots into it, runs the selector as an unprivileged
uid under rlimits (in the run's cgroup where there is one), kills the namespace when the
selector ends or its time is up, copies /output back and reports a JSON status. A setup
error names the step, never a host path. Steps: docs/sandbox.md ("PID 1").

Standard library only: it runs with `-I -S` so nothing from the project or the
virtual environment is imported while it holds root.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import resource
import shutil
import signal
import socket
import stat
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

MAX_COPY_DEPTH = 8
"""Directory depth copied out of /output (a scores file needs none)."""
MAX_COPY_ENTRIES = 10000
"""Entries copied out of /output; more is not a selector's output."""
MAX_SKIPPED_LISTED = 20
"""Entries not copied that the status names (the status must stay small)."""
OUTPUT_INODES = 4096
"""Inode cap of the /output tmpfs, so a selector cannot make millions of empty files
(the status says `output_cap: "files"` when a run reached it)."""
COPY_FILE_BYTES = 1 << 20
"""A read-only file this small is copied into the new root instead of bound (a bind
lists the host file system and device in the mount table)."""
HOSTNAME = "sandbox"
PROC_VIEW = ("meminfo", "loadavg", "stat", "vmstat", "zoneinfo", "buddyinfo", "pagetypeinfo",
             "diskstats", "partitions", "swaps", "schedstat", "softirqs", "interrupts",
             "locks", "cmdline", "key-users", "slabinfo", "pressure")
"""Entries of /proc that show host-wide figures or host details, covered by files of the
sandbox's own (`_proc_file`; empty where nothing is needed, an empty folder for
`pressure`); entries this kernel does not have are skipped."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_ulong, ctypes.c_char_p]


class SetupError(Exception):
    """A step of building the sandbox failed; the selector has not started."""


def _mount(source, target, fstype, flags, data=None, *, what: str) -> None:
    enc = (lambda v: None if v is None else v.encode())
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise SetupError(f"cannot mount {what}: {os.strerror(ctypes.get_errno())}")


def _bind(source: str, target: str, *, readonly: bool, what: str, extra: int = 0) -> None:
    try:
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "a"):
                pass
    except OSError as exc:
        raise SetupError(f"cannot make the mount point of {what}: {exc.strerror}") from None
    _mount(source, target, None, MS_BIND | MS_REC, what=what)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | extra | (MS_RDONLY if readonly else 0)
    _mount(None, target, None, flags, what=what)


def _tmpfs(target: str, options: str, flags: int, *, what: str) -> None:
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", flags, options, what=what)


def _mount_points() -> list[str]:
    """The mount points of this mount namespace (before the chroot: host paths)."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    unescape = (lambda text: re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text))
    return [unescape(line.split()[4]) for line in lines if len(line.split()) > 4]


def _has_submounts(source: str, mount_points: list[str]) -> bool:
    inside = os.path.realpath(source).rstrip("/") + "/"
    return any(point.startswith(inside) for point in mount_points)


def _expose(source: str, target: str, layer: str, flags: int, mount_points: list[str], *,
            what: str) -> None:
    """Give the new root a read-only view of a host directory or file at `target`.

    A directory is an overlay whose one real layer is a bind of `source` made in
    the staging area (the working directory, outside the new root, so not listed
    inside) under the neutral name `layer`: the mount table inside shows
    "overlay sandbox ... lowerdir=<layer>:empty", not the host path, file
    system or device a bind shows. A small file is copied. Otherwise (no
    overlayfs here, submounts the overlay would not show, a large file) a plain
    read-only bind, as before.
    """
    if os.path.isdir(source) and not _has_submounts(source, mount_points):
        try:
            os.mkdir(layer, 0o700)
            _mount(source, layer, None, MS_BIND, what=what)
            os.makedirs(target, exist_ok=True)
        except OSError as exc:
            raise SetupError(f"cannot make the mount point of {what}: {exc.strerror}") from None
        try:
            _mount("sandbox", target, "overlay", MS_RDONLY | MS_NOSUID | flags,
                   f"lowerdir={layer}:empty", what=what)
            return
        except SetupError:
            pass  # the bind below still gives the view, listing its host path
    elif os.path.isfile(source) and os.path.getsize(source) <= COPY_FILE_BYTES:
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
            os.chmod(target, stat.S_IMODE(os.stat(source).st_mode) & 0o755)
            return
        except OSError as exc:
            raise SetupError(f"cannot copy {what}: {exc.strerror}") from None
    _bind(source, target, readonly=True, what=what, extra=flags)


def _devices(root: str, devices: list) -> None:
    """A read-only tmpfs /dev holding the device nodes (made with the host's numbers;
    bound from the host where this process may not make nodes)."""
    _tmpfs(root + "/dev", "size=64k,mode=0755", MS_NOSUID | MS_NOEXEC, what="/dev")
    for dev in devices:
        info = os.stat(dev)
        try:
            os.mknod(root + dev, stat.S_IFMT(info.st_mode) | 0o666, info.st_rdev)
            os.chmod(root + dev, 0o666)
        except OSError:
            _bind(dev, root + dev, readonly=False, what="a device node", extra=MS_NOEXEC)
    _mount(None, root + "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
           what="/dev read-only")


def _proc_file(name: str, cfg: dict) -> str:
    """What the sandbox's /proc/<name> says: its own memory and CPUs, no load, no host
    activity (`PROC_VIEW`)."""
    if name == "meminfo":
        kib = int(cfg["rlimits"]["AS"]) // 1024
        fields = [("MemTotal", kib), ("MemFree", kib), ("MemAvailable", kib), ("Buffers", 0),
                  ("Cached", 0), ("SwapCached", 0), ("SwapTotal", 0), ("SwapFree", 0)]
        return "".join(f"{key + ':':<16}{value:>8} kB\n" for key, value in fields)
    if name == "loadavg":
        return "0.00 0.00 0.00 1/1 1\n"
    if name == "stat":
        cpus = cfg.get("cpus") or sorted(os.sched_getaffinity(0))
        zeros = " 0" * 10
        return (f"cpu {zeros}\n" + "".join(f"cpu{c}{zeros}\n" for c in cpus)
                + "intr 0\nctxt 0\nbtime 0\nprocesses 0\nprocs_running 1\n"
                "procs_blocked 0\nsoftirq 0\n")
    if name == "swaps":
        return "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
    return ""


def _proc(root: str, stage: str, cfg: dict) -> None:
    """A private /proc (hidepid=2) whose host-wide entries are covered (`PROC_VIEW`)."""
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2",
           what="/proc")
    os.mkdir(stage + "/proc", 0o755)
    for name in PROC_VIEW:
        target = f"{root}/proc/{name}"
        if not os.path.lexists(target):
            continue
        source = f"{stage}/proc/{name}"
        if os.path.isdir(target):
            os.mkdir(source, 0o555)
        else:
            with open(source, "w") as f:
                f.write(_proc_file(name, cfg))
            os.chmod(source, 0o444)
        _mount(source, target, None, MS_BIND, what="a file of /proc")
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
               | MS_NOEXEC, what="a file of /proc")


def build_root(cfg: dict) -> str:
    """Mount the sandbox's filesystem under cfg['root'] (still outside it); returns the
    directory to chroot into.

    cfg['root'] becomes a staging area (the binds the overlays are made of, the
    files that cover /proc entries) holding the new root; the staging area is
    outside the new root, so its mounts are neither reachable nor listed there.
    """
    staging = cfg["root"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE, what="the host's mounts as private")
    mount_points = _mount_points()
    _tmpfs(staging, "size=1m,mode=0700", MS_NOSUID | MS_NODEV, what="the staging area")
    root = staging + "/root"
    os.mkdir(staging + "/empty", 0o755)
    os.chdir(staging)  # overlay layers are named relative to it (`_expose`)
    _tmpfs(root, "size=8m,mode=0755", MS_NOSUID | MS_NODEV, what="the sandbox root")
    # /tmp before the binds: an interpreter or venv under /tmp is bound onto this tmpfs
    _tmpfs(root + "/tmp", f"size={cfg['tmp_bytes']},mode=1777", MS_NOSUID | MS_NODEV, what="/tmp")
    for index, (source, target, what) in enumerate(cfg["ro_binds"]):
        noexec = MS_NOEXEC if target in ("/input",) else 0
        _expose(source, root + target, f"layer{index}", MS_NODEV | noexec, mount_points,
                what=what)
    for link, target in cfg["symlinks"]:
        os.symlink(target, root + link)
    os.makedirs(root + "/etc", exist_ok=True)
    uid, gid = cfg["uid"], cfg["gid"]
    with open(root + "/etc/passwd", "w") as f:
        f.write("root:x:0:0::/:/usr/sbin/nologin\n"
                f"selector:x:{uid}:{gid}::/tmp:/usr/sbin/nologin\n")
    with open(root + "/etc/group", "w") as f:
        f.write(f"root:x:0:\nselector:x:{gid}:\n")
    with open(root + "/etc/hostname", "w") as f:
        f.write(HOSTNAME + "\n")
    _devices(root, cfg["devices"])
    _proc(root, staging, cfg)
    _tmpfs(root + "/output",
           f"size={cfg['output_bytes']},nr_inodes={OUTPUT_INODES},mode=0755,uid={uid},gid={gid}",
           MS_NOSUID | MS_NODEV | MS_NOEXEC, what="/output")
    _mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
           what="the sandbox root read-only")
    return root


def _exec_selector(cfg: dict, command: list, cgroup_fds: list, *, quiet: bool = False) -> None:
    """In the forked child: join the run's cgroup, limits, then exec setpriv, which drops
    to the sandbox uid. `quiet` sends stdout and stderr to /dev/null (the interpreter check)."""
    try:
        for fd in cgroup_fds:
            os.write(fd, b"0")  # "0": the writing process itself, with all it will start
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        if quiet:
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
        os.closerange(3, 1 << 16)
        limits = cfg["rlimits"]
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
        if cfg["cpus"]:
            os.sched_setaffinity(0, cfg["cpus"])
        os.chdir("/tmp")
        argv = ["/usr/bin/setpriv", f"--reuid={cfg['uid']}", f"--regid={cfg['gid']}",
                "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all",
                "--", *command]
        os.execve(argv[0], argv, cfg["env"])
    except OSError as exc:
        os.write(2, f"sandbox: cannot start the selector: {exc}\n".encode())
    os._exit(127)


def _kill_all() -> None:
    """SIGKILL every process of this PID namespace but ourselves, and reap them."""
    if os.getpid() != 1:  # never signal -1 outside a private PID namespace
        raise SetupError("refusing to kill all processes: not PID 1 of a new PID namespace")
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def check_interpreter(cfg: dict, cgroup_fds: list) -> None:
    """Check every bind is visible in the new root, then run `interpreter_check` (the
    interpreter started the way the selector will be, site-packages and all, see
    `local.interpreter_check`) and see it exit 0.

    A sandbox in which the service's own interpreter cannot start (not
    mounted, hidden by another mount, missing libraries) is the service's
    failure: it must be reported as a setup failure, not as a selector that
    crashed.
    """
    for _, target, what in cfg["ro_binds"]:
        if not os.path.exists(target):
            raise SetupError(f"{what} is not visible inside (covered by another mount)")
    pid = os.fork()
    if pid == 0:
        _exec_selector(cfg, cfg["interpreter_check"], cgroup_fds, quiet=True)
    deadline = time.monotonic() + cfg["setup_seconds"]
    while True:
        reaped, wstatus = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            if os.waitstatus_to_exitcode(wstatus) == 0:
                return
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    _kill_all()
    raise SetupError("the interpreter does not start inside")


def supervise(cfg: dict, cgroup_fds: list) -> dict:
    """Run the selector to its end or its wall limit; reap orphans meanwhile."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _exec_selector(cfg, cfg["command"], cgroup_fds)
    deadline = start + cfg["wall_seconds"]
    status, timed_out = None, False
    while status is None:
        reaped, wstatus = os.waitpid(-1, os.WNOHANG)
        if reaped == pid:
            status = wstatus
        elif reaped == 0:
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.01)
    wall = time.monotonic() - start
    _kill_all()
    exit_code = None if status is None else os.waitstatus_to_exitcode(status)
    return {"exit_code": exit_code, "timed_out": timed_out, "wall_seconds": wall}


def _copy_file(name: str, src_dir: int, dst_dir: int) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=src_dir)
    try:
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                      dir_fd=dst_dir)
        try:
            while chunk := os.read(src, 1 << 20):
                os.write(dst, chunk)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _skip(report: dict, what: str) -> None:
    report["n_skipped"] = report.get("n_skipped", 0) + 1
    if len(report["skipped"]) < MAX_SKIPPED_LISTED:
        report["skipped"].append(what)


def copy_out(src_dir: int, dst_dir: int, report: dict, depth: int = 0, prefix: str = "") -> None:
    """Copy a directory tree between two open directories, never following links.

    Symlinks are recreated as symlinks (so the reader sees and rejects them);
    FIFOs, sockets and devices are skipped and listed in report['skipped'].
    """
    for name in sorted(os.listdir(src_dir)):
        report["entries"] += 1
        path = prefix + name
        if report["entries"] > MAX_COPY_ENTRIES or depth > MAX_COPY_DEPTH:
            _skip(report, f"{path} (over the copy limits)")
            continue
        st = os.lstat(name, dir_fd=src_dir)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=src_dir), name, dir_fd=dst_dir)
        elif stat.S_ISREG(st.st_mode):
            _copy_file(name, src_dir, dst_dir)
        elif stat.S_ISDIR(st.st_mode):
            os.mkdir(name, 0o755, dir_fd=dst_dir)
            sub_src = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=src_dir)
            sub_dst = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dst_dir)
            try:
                copy_out(sub_src, sub_dst, report, depth + 1, path + "/")
            finally:
                os.close(sub_src)
                os.close(sub_dst)
        else:
            _skip(report, f"{path} (not a file, directory or link)")


def _open(path: str, flags: int, what: str) -> int:
    try:
        return os.open(path, flags)
    except OSError as exc:
        raise SetupError(f"cannot open {what}: {exc.strerror}") from None


def main() -> int:
    cfg = json.loads(sys.stdin.read())
    status_fd = cfg["status_fd"]
    report: dict = {"error": None, "phase": "setup", "exit_code": None, "timed_out": False,
                    "output_full": False, "output_cap": None, "wall_seconds": 0.0,
                    "skipped": [], "entries": 0}
    try:
        if os.getpid() != 1:
            raise SetupError("not PID 1: the PID namespace was not created")
        host_out = _open(cfg["host_output"], os.O_RDONLY | os.O_DIRECTORY, "the output directory")
        cgroup_fds = [_open(path, os.O_WRONLY | os.O_CLOEXEC, "the run's cgroup")
                      for path in cfg["cgroup_procs"]]
        try:  # a UTS namespace of its own, which starts with a copy of the host's name
            socket.sethostname(HOSTNAME)
        except OSError as exc:
            raise SetupError(f"cannot set the host name: {exc.strerror}") from None
        os.chroot(build_root(cfg))
        os.chdir("/")
        check_interpreter(cfg, cgroup_fds)
        report["phase"] = "run"
        report.update(supervise(cfg, cgroup_fds))
        report["phase"] = "copy"
        vfs = os.statvfs("/output")
        report["output_full"] = vfs.f_bavail == 0 or vfs.f_favail == 0
        report["output_cap"] = "bytes" if vfs.f_bavail == 0 else \
            "files" if vfs.f_favail == 0 else None
        report["output_files"] = OUTPUT_INODES
        out = os.open("/output", os.O_RDONLY | os.O_DIRECTORY)
        copy_out(out, host_out, report)
    except SetupError as exc:  # reported to the host, which decides the status
        report["error"] = str(exc)
    except OSError as exc:  # never a host path: an entry of /output at most
        name = exc.filename if isinstance(exc.filename, str) and \
            not exc.filename.startswith("/") else None
        report["error"] = f"{exc.strerror}" + (f": {name}" if name else "")
    os.write(status_fd, json.dumps(report).encode())
    os.close(status_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
