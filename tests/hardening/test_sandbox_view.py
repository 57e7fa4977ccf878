"""Issue 30, items 5 and 6 (second half), in the real local sandbox.

5. A selector read the host through /proc: /proc/self/mountinfo named every bind
   source (the worker's run directories holding /selector and /input, the host's
   device and file-system options), and /proc/meminfo and /proc/loadavg were the host's.
   Now the mount table names no host path but the interpreter's own installation (where
   it runs from: its `sys.prefix`), and /proc shows the run's own memory and CPUs, no
   load. Seen failing on the old code: mountinfo held the selector's and the input's
   host directories, `/dev/vda` and the host's MemTotal.
6. A selector that used up the inodes of /output was told it reached the *size* cap.
   Seen failing on the old code: "/output reached its size cap of ... bytes".
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from sandbox import defaults, nsinit
from sandbox.base import Limits, RunSpec, RunStatus
from sandbox.demo import demo_input
from sandbox.local import LocalSandbox
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")

REPO = REPO_ROOT
LIMITS = Limits(wall_seconds=20, memory_bytes=512 * defaults.MIB, pids=16, cpus=1,
                output_bytes=8 * defaults.MIB, tmp_bytes=8 * defaults.MIB)
READ = ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/mounts", "/proc/self/mountstats",
        "/proc/meminfo", "/proc/loadavg", "/proc/stat", "/proc/cmdline", "/proc/partitions",
        "/proc/swaps", "/proc/sys/kernel/hostname")
PROBE = f"""
import json, os
seen = {{}}
for path in {READ!r}:
    try:
        with open(path) as handle:
            seen[path] = handle.read()
    except OSError as exc:
        seen[path] = "denied: " + exc.strerror
with open("/dev/null", "w") as sink:
    sink.write("x")
with open("/dev/urandom", "rb") as source:
    seen["urandom"] = len(source.read(8))
seen["nodename"] = os.uname().nodename
seen["cpu_count"] = os.cpu_count()
print(json.dumps(seen))
"""


def _overlay_available() -> bool:
    try:
        return "overlay" in Path("/proc/filesystems").read_text()
    except OSError:
        return False


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    box = LocalSandbox(work_root=tmp_path_factory.mktemp("workers") / "base")
    yield box
    box.close()


def _selector(tmp_path: Path, name: str, code: str) -> Path:
    directory = tmp_path / "host-side" / name
    directory.mkdir(parents=True)
    (directory / "selector.py").write_text(code)
    for path in (directory, *directory.parents):
        if path == tmp_path.parent:
            break
        path.chmod(0o755)
    (directory / "selector.py").chmod(0o644)
    return directory


def _run(sandbox: LocalSandbox, tmp_path: Path, selector: Path):
    tree = sandbox.workdir.mkdtemp("run-")  # as the service lays a run out
    demo_input(tree / "input")
    (tree / "output").mkdir()
    spec = RunSpec(image=str(selector), input_dir=tree / "input", output_dir=tree / "output",
                   limits=LIMITS)
    return sandbox.run(spec), tree


def _host_device() -> str:
    """The source of the host's root mount (`/dev/vda`, `overlay`...)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        if left.split()[4] == "/":
            return right.split()[1]
    return "/dev/"


@pytest.mark.skipif(not _overlay_available(), reason="the neutral mount table needs overlayfs")
def test_the_selector_s_proc_names_no_host_path_and_no_host_figure(sandbox, tmp_path):
    selector = _selector(tmp_path, "probe", PROBE)
    result, tree = _run(sandbox, tmp_path, selector)
    assert result.status is RunStatus.OK, (result.reason, result.stderr_tail)
    seen = json.loads(result.stdout_tail)
    interpreter = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)} | \
        {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    host_paths = {str(selector), str(tree), str(sandbox.workdir.path), str(tmp_path), str(REPO),
                  *interpreter}
    device = _host_device()
    mountinfo = seen["/proc/self/mountinfo"]
    assert mountinfo and not mountinfo.startswith("denied")
    points = []
    for line in mountinfo.splitlines():
        left, right = line.split(" - ", 1)
        root, point = left.split()[3], left.split()[4]
        points.append(point)
        assert root == "/" or root.startswith("/proc/"), line  # no bind source
        assert not [p for p in host_paths if p in right], line  # no layer or option
        assert device not in right, line
    places = {"/", "/tmp", "/usr", "/selector", "/input", "/dev", "/proc", "/output"}
    assert set(points) - places - {p for p in points if p.startswith("/proc/")} <= interpreter
    for name in ("/proc/self/mounts", "/proc/mounts", "/proc/self/mountstats"):
        text = seen[name]
        for point in sorted(interpreter, key=len, reverse=True):  # its mount points only
            text = text.replace(f" {point} ", " <interpreter> ")
        assert not [p for p in host_paths if p in text], (name, text)
        assert device not in text, (name, text)
    # every file read names none of the host's paths (the mount tables aside: above)
    for name, text in seen.items():
        if name not in ("/proc/self/mountinfo", "/proc/self/mounts", "/proc/mounts",
                        "/proc/self/mountstats") and isinstance(text, str):
            assert not [p for p in host_paths if p in text], (name, text)
    # the run's own memory, no load, its own CPUs, not the host's
    host_total = next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:"))
    assert host_total not in seen["/proc/meminfo"]
    assert seen["/proc/meminfo"].splitlines()[0].split() == [
        "MemTotal:", str(LIMITS.memory_bytes // 1024), "kB"]
    assert seen["/proc/loadavg"] == "0.00 0.00 0.00 1/1 1\n"
    cpu_lines = [ln for ln in seen["/proc/stat"].splitlines() if ln.startswith("cpu")]
    assert len(cpu_lines) == 1 + LIMITS.cpu_count
    assert all(set(ln.split()[1:]) == {"0"} for ln in cpu_lines)
    assert seen["/proc/cmdline"] == "" and seen["/proc/partitions"] == ""
    assert seen["/proc/sys/kernel/hostname"] == "sandbox\n" and seen["nodename"] == "sandbox"
    assert seen["urandom"] == 8  # the sandbox's own /dev still works


def test_submounts_keep_the_plain_bind():
    """A directory with mounts below it is bound (an overlay would hide those mounts)."""
    points = ["/", "/srv/data", "/srv/data/inner", "/srvx"]
    assert nsinit._has_submounts("/srv/data", points)
    assert not nsinit._has_submounts("/srv/data/inner", points)
    assert not nsinit._has_submounts("/srv", ["/", "/srvx"])


def test_reaching_the_inode_cap_of_output_is_named_as_such(sandbox, tmp_path):
    selector = _selector(tmp_path, "inodes", (
        "import os\nmade = 0\ntry:\n    while True:\n"
        "        open(f'/output/f{made}', 'w').close()\n        made += 1\n"
        "except OSError as exc:\n    print(f'made {made} files: {exc.strerror}')\n"))
    result, _ = _run(sandbox, tmp_path, selector)
    assert result.status is RunStatus.OUTPUT_LIMIT, result.reason
    assert result.reason.startswith(
        f"/output reached its cap of {nsinit.OUTPUT_INODES} files and folders"), result.reason
    assert "size cap" not in result.reason
    assert "No space left on device" in result.stdout_tail


def test_reaching_the_size_cap_of_output_still_says_size(sandbox, tmp_path):
    selector = _selector(tmp_path, "bytes", (
        "try:\n    with open('/output/big', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * 65536)\nexcept OSError as exc:\n    print(exc.strerror)\n"))
    result, _ = _run(sandbox, tmp_path, selector)
    assert result.status is RunStatus.OUTPUT_LIMIT, result.reason
    assert result.reason.startswith(f"/output reached its size cap of {LIMITS.output_bytes} bytes")


SUBMOUNT_SCRIPT = """
import json, subprocess, sys
from pathlib import Path
from sandbox.base import Limits, RunSpec
from sandbox.demo import demo_input
from sandbox.local import LocalSandbox

base, selector = Path(sys.argv[1]), sys.argv[2]
sandbox = LocalSandbox(work_root=base / "workers")
tree = sandbox.workdir.mkdtemp("run-")
demo_input(tree / "input")
(tree / "input" / "extra").mkdir(mode=0o755)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs",
                str(tree / "input" / "extra")], check=True)
(tree / "input" / "extra" / "below.txt").write_text("on a submount")
(tree / "input" / "extra" / "below.txt").chmod(0o644)
(tree / "output").mkdir()
result = sandbox.run(RunSpec(image=selector, input_dir=tree / "input",
                             output_dir=tree / "output", limits=Limits(wall_seconds=20)))
print(json.dumps([result.status.value, result.stdout_tail]))
sandbox.close()
"""


def test_a_directory_with_mounts_below_it_is_still_seen_whole(tmp_path):
    """An overlay would hide mounts below its layer, so such a directory keeps the plain
    bind (recursive). Run in a mount namespace of its own: the host's mounts are untouched."""
    import subprocess

    selector = _selector(tmp_path, "submount", (
        "print(open('/input/extra/below.txt').read())\n"
        "print([l.split()[4] for l in open('/proc/self/mountinfo')])\n"))
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                           "-c", SUBMOUNT_SCRIPT, str(tmp_path), str(selector)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    status, stdout = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == "ok", stdout
    assert stdout.startswith("on a submount\n")
    assert "'/input/extra'" in stdout  # the submount came along with the bind
