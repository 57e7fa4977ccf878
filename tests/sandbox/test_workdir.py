"""A worker killed mid-run: its sandbox must not outlive it, and the next worker removes
what it left (`sandbox.workdir`). Real processes, real kill -9."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sandbox import cgroups, defaults
from sandbox.base import SandboxConfigError
from sandbox.local import LocalSandbox
from sandbox.workdir import WorkerDir, base_dir, process_start, reap, secure_base
from tests.support.paths import HOSTILE_SELECTORS, REPO_ROOT

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")

REPO = REPO_ROOT
HOSTILE = HOSTILE_SELECTORS

WORKER = """
import sys
from pathlib import Path
from sandbox.base import Limits, RunSpec
from sandbox.demo import demo_input
from sandbox.local import LocalSandbox

base, selector, uid = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sandbox = LocalSandbox(work_root=base, uid=uid)
tree = sandbox.workdir.mkdtemp("run-")  # as service.selectors.run.run_tree does
demo_input(tree / "input")
(tree / "output").mkdir()
print(sandbox.workdir.path, flush=True)
sandbox.run(RunSpec(image=selector, input_dir=tree / "input", output_dir=tree / "output",
                    limits=Limits(wall_seconds=120)))
"""


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines = (entry / "status").read_text().splitlines()
            except OSError:
                continue
            if any(line.startswith("Uid:") and int(line.split()[1]) == uid for line in lines):
                found.append(int(entry.name))
    return found


def _wait(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_killed_worker_leaves_no_selector_and_no_tree(tmp_path):
    base = tmp_path / "workers"
    uid = defaults.SANDBOX_UID_RANGE[0] + 1000 + os.getpid() % 50000
    if cgroups.available():  # a selector that leaves a daemon (its own session) behind
        selector, processes = HOSTILE / "loop", 2
    else:  # single-process runs: a selector that just waits
        selector, processes = tmp_path / "sleeper", 1
        selector.mkdir(mode=0o755)
        (selector / "selector.py").write_text("import time\ntime.sleep(600)\n")
        (selector / "selector.py").chmod(0o644)
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(base), str(selector),
                               str(uid)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        worker_dir = Path(worker.stdout.readline().strip())
        _wait(lambda: len(_processes_of(uid)) >= processes, 30)
        assert len(_processes_of(uid)) >= processes, "the selector did not start"
        assert list((worker_dir / "runs").iterdir())
        records = [json.loads(r.read_text()) for r in (worker_dir / "sandboxes").iterdir()]
        run_cgroups = [Path(path) for record in records for path in record["cgroups"]]
        assert len(records) == 1 and all(path.is_dir() for path in run_cgroups)
        worker.kill()  # kill -9 mid-run
        worker.wait()
        LocalSandbox(work_root=base).close()  # the next worker starts (and stops again)
        _wait(lambda: not _processes_of(uid), 10)
        assert _processes_of(uid) == []
        assert not worker_dir.exists()
        assert list(base.iterdir()) == []
        assert not [path for path in run_cgroups if path.exists()]
    finally:
        worker.kill()
        worker.wait()
        worker.stdout.close()
        for pid in _processes_of(uid):
            os.kill(pid, signal.SIGKILL)


def _dead_worker_dir(base: Path) -> Path:
    """A worker directory whose owner has exited (claimed by a process that is gone)."""
    code = "import sys; from sandbox.workdir import WorkerDir; " \
           "print(WorkerDir.claim(sys.argv[1]).path)"
    done = subprocess.run([sys.executable, "-c", code, str(base)], capture_output=True,
                          text=True, check=True, cwd=REPO, timeout=60)
    return Path(done.stdout.strip())


def test_reap_kills_recorded_sandboxes_of_dead_workers_only(tmp_path):
    base = tmp_path / "workers"
    live = WorkerDir.claim(base)
    dead = _dead_worker_dir(base)
    sandboxes = [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(3)]
    try:
        live.record_sandbox("running", sandboxes[0].pid, ())
        record = WorkerDir(dead, -1).record_sandbox("orphan", sandboxes[1].pid, ())
        assert json.loads(record.read_text())["start"] == process_start(sandboxes[1].pid)
        reused = {"pid": sandboxes[2].pid, "cgroups": [],  # the pid now names another process
                  "start": str(int(process_start(sandboxes[2].pid)) - 100)}
        (dead / "sandboxes" / "reused.json").write_text(json.dumps(reused))
        assert reap(base) == [dead.name]
        assert sandboxes[1].wait(timeout=10) == -signal.SIGKILL
        assert sandboxes[0].poll() is None and sandboxes[2].poll() is None
        assert not dead.exists() and live.path.exists()
    finally:
        for proc in sandboxes:
            proc.kill()
            proc.wait()
        live.close()
    assert not live.path.exists()


# ------------------------------------------------------------------ planted records


def _bystander_cgroups(stack: list) -> tuple[Path, Path] | None:
    """Two cgroups that are no run's, each holding a `sleep`: one beside the runs'
    cgroups, one named like a run's but inside the first (a place runs are not made)."""
    parents = sorted(cgroups.run_parents()) if cgroups.available() else []
    if not parents:
        return None
    outer = parents[0] / f"expaudit-bystander-{os.getpid()}"
    inner = outer / cgroups.run_name()
    for path in (outer, inner):
        path.mkdir()
        stack.append(path)
        sleeper = subprocess.Popen(["sleep", "60"])
        stack.append(sleeper)
        (path / "cgroup.procs").write_text(str(sleeper.pid))
    return outer, inner


def _plant(base: Path, pid: int | None, cgroup_paths: list[str]) -> Path:
    """What anyone able to write `base` could leave there: a dead worker's directory
    (no lock: debris) recording a 'sandbox' that is some other process and cgroup."""
    planted = base / "w-1-planted"
    (planted / "sandboxes").mkdir(parents=True)
    record = {"pid": pid, "start": process_start(pid) if pid else None, "cgroups": cgroup_paths}
    (planted / "sandboxes" / "x.json").write_text(json.dumps(record))
    return planted


def test_reap_touches_nothing_a_planted_record_names(tmp_path):
    """A base directory others could write to is refused (reap and claim alike), and in
    the worker's own base a record naming a cgroup that is no run's removes nothing."""
    stack: list = []
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stack.append(victim)
    try:
        bystanders = _bystander_cgroups(stack)
        named = [str(p) for p in bystanders] if bystanders else []
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # a world-writable base, as /tmp/expaudit-workers could be
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        link = tmp_path / "link"  # a base that is a link to a directory of another's choice
        link.symlink_to(real)
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 65534, 65534)  # made by another user before the worker started
        reasons = {shared: "its mode is 0o777", link: "it is a symbolic link",
                   foreign: "it belongs to uid 65534"}
        for base, reason in reasons.items():
            planted = _plant(real if base is link else base, victim.pid, named)
            for attempt in (lambda: reap(base), lambda: WorkerDir.claim(base)):
                with pytest.raises(SandboxConfigError, match=f"'work_root'.*{reason}"):
                    attempt()
            assert victim.poll() is None and planted.exists()
            shutil.rmtree(planted)
        own = tmp_path / "own"
        planted = _plant(own, None, named)
        own.chmod(0o700)
        assert reap(own) == [planted.name]
        assert victim.poll() is None
        for path in map(Path, named):
            assert path.is_dir() and (path / "cgroup.procs").read_text().split(), path
    finally:
        for item in reversed(stack):
            if isinstance(item, Path):
                with contextlib.suppress(FileNotFoundError):
                    item.rmdir()
            else:
                item.kill()
                item.wait()


def test_default_base_is_the_users_own(tmp_path):
    base = secure_base(base_dir())
    info = base.lstat()
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700
    assert base != Path(tempfile.gettempdir()) / "expaudit-workers"
    made = secure_base(tmp_path / "a" / "workers")
    assert stat.S_IMODE(made.lstat().st_mode) == 0o700
