"""A worker killed mid-run: its sandbox must not outlive it, and the next worker removes
what it left (`runner.sandbox.workdir`). Real processes, real kill -9."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.sandbox import cgroups, defaults
from runner.sandbox.local import LocalSandbox
from runner.sandbox.workdir import WorkerDir, process_start, reap

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")

REPO = Path(__file__).resolve().parents[1]
HOSTILE = Path(__file__).resolve().parent / "hostile_selectors"

WORKER = """
import sys
from pathlib import Path
from runner.sandbox.base import Limits, RunSpec
from runner.sandbox.demo import demo_input
from runner.sandbox.local import LocalSandbox

base, selector, uid = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sandbox = LocalSandbox(work_root=base, uid=uid)
tree = sandbox.workdir.mkdtemp("run-")  # as service.container_jobs.run_tree does
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
    code = "import sys; from runner.sandbox.workdir import WorkerDir; " \
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
