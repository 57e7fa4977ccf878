"""The first process inside the local sandbox's namespaces (PID 1 there).

`runner.sandbox.local` starts it as
`unshare --net --mount --pid --ipc --uts --fork --kill-child -- python -I -S nsinit.py`
and writes a JSON configuration to its stdin. Running as root inside fresh
namespaces, it builds a new root filesystem on a small tmpfs (read-only binds
of /usr, the Python installation, the selector directory at /selector and the
input at /input; fresh tmpfs /tmp and /output with size caps; a private
/proc), chroots into it and starts the selector as an unprivileged uid under
rlimits via `setpriv`. When the selector exits or its wall time is up it kills
every other process in the PID namespace, copies /output to the host output
directory without following links, and reports a JSON status on the status
file descriptor.

Standard library only: it runs with `-I -S` so nothing from the project or the
virtual environment is imported while it holds root.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
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
"""Inode cap of the /output tmpfs, so a selector cannot make millions of empty files."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_ulong, ctypes.c_char_p]


class SetupError(Exception):
    """A step of building the sandbox failed; the selector has not started."""


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = (lambda v: None if v is None else v.encode())
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise SetupError(f"mount {source or fstype} on {target}: {os.strerror(err)}")


def _bind(source: str, target: str, *, readonly: bool, extra: int = 0) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass
    _mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | extra | (MS_RDONLY if readonly else 0)
    _mount(None, target, None, flags)


def _tmpfs(target: str, options: str, flags: int) -> None:
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", flags, options)


def build_root(cfg: dict) -> None:
    """Mount the sandbox's filesystem under cfg['root'] (still outside it)."""
    root = cfg["root"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _tmpfs(root, "size=8m,mode=0755", MS_NOSUID | MS_NODEV)
    for source, target in cfg["ro_binds"]:
        noexec = MS_NOEXEC if target in ("/input",) else 0
        _bind(source, root + target, readonly=True, extra=MS_NODEV | noexec)
    for link, target in cfg["symlinks"]:
        os.symlink(target, root + link)
    os.makedirs(root + "/etc", exist_ok=True)
    uid, gid = cfg["uid"], cfg["gid"]
    with open(root + "/etc/passwd", "w") as f:
        f.write("root:x:0:0::/:/usr/sbin/nologin\n"
                f"selector:x:{uid}:{gid}::/tmp:/usr/sbin/nologin\n")
    with open(root + "/etc/group", "w") as f:
        f.write(f"root:x:0:\nselector:x:{gid}:\n")
    for dev in cfg["devices"]:
        _bind(dev, root + dev, readonly=False, extra=MS_NOEXEC)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    _tmpfs(root + "/tmp", f"size={cfg['tmp_bytes']},mode=1777", MS_NOSUID | MS_NODEV)
    _tmpfs(root + "/output",
           f"size={cfg['output_bytes']},nr_inodes={OUTPUT_INODES},mode=0755,uid={uid},gid={gid}",
           MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _exec_selector(cfg: dict) -> None:
    """In the forked child: limits, then exec setpriv, which drops to the sandbox uid."""
    try:
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.closerange(3, 1 << 16)
        limits = cfg["rlimits"]
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
        if cfg["cpus"]:
            os.sched_setaffinity(0, cfg["cpus"])
        os.chdir("/tmp")
        argv = ["/usr/bin/setpriv", f"--reuid={cfg['uid']}", f"--regid={cfg['gid']}",
                "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all",
                "--", *cfg["command"]]
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


def supervise(cfg: dict) -> dict:
    """Run the selector to its end or its wall limit; reap orphans meanwhile."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _exec_selector(cfg)
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


def main() -> int:
    cfg = json.loads(sys.stdin.read())
    status_fd = cfg["status_fd"]
    report: dict = {"error": None, "phase": "setup", "exit_code": None, "timed_out": False,
                    "output_full": False, "wall_seconds": 0.0, "skipped": [], "entries": 0}
    try:
        if os.getpid() != 1:
            raise SetupError("not PID 1: the PID namespace was not created")
        host_out = os.open(cfg["host_output"], os.O_RDONLY | os.O_DIRECTORY)
        build_root(cfg)
        os.chroot(cfg["root"])
        os.chdir("/")
        report["phase"] = "run"
        report.update(supervise(cfg))
        report["phase"] = "copy"
        vfs = os.statvfs("/output")
        report["output_full"] = vfs.f_bavail == 0 or vfs.f_favail == 0
        out = os.open("/output", os.O_RDONLY | os.O_DIRECTORY)
        copy_out(out, host_out, report)
    except (SetupError, OSError) as exc:  # reported to the host, which decides the status
        report["error"] = str(exc)
    os.write(status_fd, json.dumps(report).encode())
    os.close(status_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
