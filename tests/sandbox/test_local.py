"""The local (namespace) sandbox, for real: real namespaces, real processes, real limits.

Each hostile selector in tests/hostile_selectors/ runs in its own test; every
test then checks that nothing of the selector survives and that a normal
selector still runs right after it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sandbox import cgroups, defaults, nsinit
from sandbox.base import Limits, RunSpec, RunStatus, SandboxConfigError
from sandbox.execute import run_selector
from sandbox.local import LocalSandbox, directory_digest
from tests.support.sandbox_probes import outcome_secret, watched_listener
from tests.support.paths import REPO_ROOT, HOSTILE_SELECTORS

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")

REPO = REPO_ROOT
EXAMPLES = REPO / "examples" / "selectors"
HOSTILE = HOSTILE_SELECTORS
multi_process = pytest.mark.skipif(
    os.geteuid() != 0 or cgroups.available() is None,
    reason="without a cgroup the local sandbox runs selectors as a single process")
LIMITS = Limits(wall_seconds=3, memory_bytes=256 * defaults.MIB, pids=16, cpus=1,
                output_bytes=8 * defaults.MIB, tmp_bytes=8 * defaults.MIB)


class _Tracked(LocalSandbox):
    """A local sandbox that notes the uid of each of its runs (`OWN_UIDS`, `self.uids`)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.uids: set[int] = set()

    def _config(self, *args, **kwargs) -> dict:
        cfg = super()._config(*args, **kwargs)
        self.uids.add(cfg["uid"])
        OWN_UIDS.add(cfg["uid"])
        return cfg


OWN_UIDS: set[int] = set()
"""The uids this module's runs were given: other tests' and other sessions' sandboxes on the
host (uids of the same range) are none of its business."""


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    return _Tracked()


def _spec(image: Path, input_dir: Path, tmp_path: Path, limits: Limits = LIMITS,
          **kwargs) -> RunSpec:
    out = tmp_path / f"out-{time.monotonic_ns()}"
    out.mkdir()
    return RunSpec(image=str(image), input_dir=input_dir, output_dir=out, limits=limits, **kwargs)


def _sandbox_processes(uids: set[int] | None = None) -> list[int]:
    """Host pids still running as a uid of this module's runs (`uids`: of some of them)."""
    uids = OWN_UIDS if uids is None else uids
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if int(uid_line.split()[1]) in uids:
                pids.append(int(entry.name))
    return pids


def test_the_process_scan_sees_only_this_modules_runs():
    """A process of another sandbox uid (an earlier test's, another session's) is not this
    module's: it neither fails the check that nothing is left nor counts towards a run."""
    low, _ = defaults.SANDBOX_UID_RANGE
    other = next(uid for uid in range(low + 99_000, low + 99_100) if uid not in OWN_UIDS)
    stranger = subprocess.Popen(["setpriv", f"--reuid={other}", f"--regid={other}", "--clear-groups",
                                 "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while stranger.pid not in _sandbox_processes({other}) and time.monotonic() < deadline:
            time.sleep(0.01)  # until setpriv has become the other uid
        assert stranger.pid in _sandbox_processes({other})
        assert stranger.pid not in _sandbox_processes()
    finally:
        stranger.kill()
        stranger.wait()


@pytest.fixture
def contained(sandbox, demo, tmp_path):
    """After the test: no sandbox process is left, and a normal selector still succeeds."""
    yield
    deadline = time.monotonic() + 2
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []
    input_dir, setting = demo
    spec = _spec(EXAMPLES / "object-proximity", input_dir, tmp_path)
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, run.result.reason


@pytest.mark.parametrize("name", ["raw32", "object-proximity"])
def test_example_selector_end_to_end(sandbox, demo, tmp_path, name):
    input_dir, setting = demo
    spec = _spec(EXAMPLES / name, input_dir, tmp_path)
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, (run.result.reason, run.result.stderr_tail)
    assert run.result.exit_code == 0
    assert run.result.image_digest == directory_digest(EXAMPLES / name)
    assert run.scores.scores.shape == (3, 6)
    # scene j is a perturbed copy of experience j mod 3 (sandbox.demo)
    np.testing.assert_array_equal(run.scores.scores.argmax(axis=0), [0, 1, 2, 0, 1, 2])


def test_selector_sees_only_its_view(sandbox, demo, tmp_path):
    input_dir, _ = demo
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o755)
    (probe / "selector.py").write_text(
        "import os, json\n"
        "print(json.dumps({'uid': os.getuid(), 'gid': os.getgid(), 'groups': os.getgroups(),\n"
        "  'root': sorted(os.listdir('/')), 'input_writable': os.access('/input', os.W_OK),\n"
        "  'usr_writable': os.access('/usr', os.W_OK), 'cwd': os.getcwd()}))\n")
    (probe / "selector.py").chmod(0o644)
    result = sandbox.run(_spec(probe, input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    seen = json.loads(result.stdout_tail)
    low, high = defaults.SANDBOX_UID_RANGE
    assert low <= seen["uid"] == seen["gid"] < high and seen["groups"] == []
    assert not seen["input_writable"] and not seen["usr_writable"]
    assert "input" in seen["root"] and "output" in seen["root"] and "home" not in seen["root"]


def test_network_is_unreachable(sandbox, demo, tmp_path, contained):
    input_dir, _ = demo
    with watched_listener("127.0.0.1") as (port, accepted):
        result = sandbox.run(_spec(HOSTILE / "network", input_dir, tmp_path, env={"HOSTILE_PORT": str(port)}))
    assert accepted == []
    assert "CONNECTED" not in result.stdout_tail
    assert result.stdout_tail.count("Network is unreachable") == 3
    assert result.status is RunStatus.CRASHED and result.exit_code == 3
    assert result.reason == "exited with code 3"


@multi_process
def test_fork_bomb_stops_at_pids_limit(sandbox, demo, tmp_path, contained):
    input_dir, _ = demo
    result = sandbox.run(_spec(HOSTILE / "forkbomb", input_dir, tmp_path))
    assert result.status is RunStatus.PIDS_LIMIT
    assert "pids limit of 16 reached" in result.reason
    assert "BlockingIOError" in result.reason
    forked = int(result.stdout_tail.split("forked ")[1].split()[0])
    assert 0 < forked < LIMITS.pids


def _run_beside_fork_holder(hostile: _Tracked, neighbour: _Tracked, demo, tmp_path):
    """Run a selector that forks once while another run holds its whole pids limit."""
    input_dir, _ = demo
    forker = tmp_path / "forker"
    forker.mkdir(mode=0o755)
    (forker / "selector.py").write_text(
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\n"
        "print('forked fine')\n")
    (forker / "selector.py").chmod(0o644)
    held = {}
    holder = threading.Thread(target=lambda: held.update(
        result=hostile.run(_spec(HOSTILE / "forkhold", input_dir, tmp_path))))
    holder.start()
    deadline = time.monotonic() + 10
    while len(_sandbox_processes(hostile.uids)) < LIMITS.pids and time.monotonic() < deadline:
        time.sleep(0.05)  # wait until the holder has forked to its limit
    assert len(_sandbox_processes(hostile.uids)) == LIMITS.pids
    result = neighbour.run(_spec(forker, input_dir, tmp_path))
    holder.join()
    assert held["result"].status is RunStatus.TIMEOUT
    assert f"holding {LIMITS.pids - 1} children" in held["result"].stdout_tail
    return result


@multi_process
def test_concurrent_run_is_unaffected_by_fork_bomb(demo, tmp_path, contained):
    result = _run_beside_fork_holder(_Tracked(), _Tracked(), demo, tmp_path)
    assert result.status is RunStatus.OK, result.reason
    assert result.stdout_tail == "forked fine\n"


@multi_process
def test_shared_uid_would_share_the_pids_limit(demo, tmp_path, contained):
    """Why every run draws its own uid: RLIMIT_NPROC counts processes per uid."""
    shared = _Tracked(uid=defaults.SANDBOX_UID_RANGE[0])
    result = _run_beside_fork_holder(shared, shared, demo, tmp_path)
    assert result.status is RunStatus.PIDS_LIMIT, result.reason


def test_unbounded_allocation_stops_at_memory_limit(sandbox, demo, tmp_path, contained):
    input_dir, _ = demo
    result = sandbox.run(_spec(HOSTILE / "memory", input_dir, tmp_path))
    assert result.status is RunStatus.OOM
    assert f"memory limit of {256 * defaults.MIB} bytes" in result.reason
    assert "MemoryError" in result.stderr_tail
    assert result.wall_seconds < LIMITS.wall_seconds


@multi_process
def test_endless_loop_is_killed_at_wall_limit(sandbox, demo, tmp_path, contained):
    input_dir, _ = demo
    start = time.monotonic()
    result = sandbox.run(_spec(HOSTILE / "loop", input_dir, tmp_path))
    elapsed = time.monotonic() - start
    assert result.status is RunStatus.TIMEOUT
    assert result.reason == "killed at the wall-clock limit of 3 s"
    assert result.exit_code is None
    assert "looping" in result.stdout_tail
    assert LIMITS.wall_seconds <= result.wall_seconds < LIMITS.wall_seconds + 0.5
    assert elapsed < LIMITS.wall_seconds + 2


def test_ten_gigabyte_output_is_capped(sandbox, demo, tmp_path, contained):
    input_dir, setting = demo
    free_before = shutil.disk_usage(tmp_path).free
    spec = _spec(HOSTILE / "bigoutput", input_dir, tmp_path)
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OUTPUT_LIMIT
    assert run.result.reason.startswith(f"/output reached its size cap of {8 * defaults.MIB} bytes")
    assert run.scores is None
    copied = sum(p.stat().st_size for p in spec.output_dir.iterdir())
    assert copied <= LIMITS.output_bytes
    # the selector wrote 10 GiB; other processes on the host move the free space by far less
    assert free_before - shutil.disk_usage(tmp_path).free < 1024 * defaults.MIB


def test_symlink_out_of_output_is_rejected(sandbox, demo, tmp_path, contained):
    input_dir, setting = demo
    target = tmp_path / "host-target.csv"
    target.write_text("scene_id,experience_id,score\n")
    spec = _spec(HOSTILE / "symlink", input_dir, tmp_path, env={"HOSTILE_TARGET": str(target)})
    run = run_selector(sandbox, spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OUTPUT_INVALID
    assert run.result.reason == (f"/output/scores.csv: value '{target}' is a symbolic link; "
                                 f"links are rejected")
    assert "hard link refused" in run.result.stdout_tail
    assert (spec.output_dir / "scores.csv").is_symlink()
    assert not (spec.output_dir / "pipe").exists()  # FIFOs are not copied out
    assert target.read_text() == "scene_id,experience_id,score\n"


def test_outcome_files_outside_input_are_invisible(sandbox, demo, tmp_path, contained):
    input_dir, _ = demo
    secret, secret_file = outcome_secret(tmp_path)
    data_dir = secret_file.parent
    spec = _spec(HOSTILE / "snoop", input_dir, tmp_path,
                 env={"HOSTILE_SECRET_PATH": str(secret_file), "HOSTILE_CHECKOUT": str(REPO)})
    result = sandbox.run(spec)
    assert result.status is RunStatus.OK, result.stderr_tail
    assert secret not in result.stdout_tail + result.stderr_tail
    lines = result.stdout_tail.splitlines()
    assert not [line for line in lines if line.startswith("READ ")]
    assert f"denied {secret_file}: No such file or directory" in lines
    assert f"denied {data_dir}: No such file or directory" in lines
    assert f"denied {REPO}/pyproject.toml: No such file or directory" in lines
    # of the checkout only the interpreter's environment may be mounted, nothing else
    listed = [line for line in lines if line.startswith(f"LISTED {REPO}:")]
    assert all("benchmark_data" not in line and "pyproject" not in line for line in listed)
    assert "outcome-like files in /input: []" in result.stdout_tail
    assert "visible process 1\n" not in result.stdout_tail  # PID 1 (root) is hidden


def test_environment_secret_does_not_reach_selector(sandbox, demo, tmp_path, contained,
                                                    monkeypatch):
    input_dir, _ = demo
    secret = "token-5d1e8b2f-do-not-leak"
    monkeypatch.setenv("EXPAUDIT_ADMIN_TOKEN", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    result = sandbox.run(_spec(HOSTILE / "envsecret", input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    shown = str(result.to_dict())
    assert secret not in shown
    assert "EXPAUDIT_ADMIN_TOKEN" not in shown and "AWS_SECRET_ACCESS_KEY" not in shown
    assert "'EXPAUDIT_INPUT': '/input'" in result.stdout_tail
    assert "denied /proc/1/environ" in result.stdout_tail


def test_gpu_request_is_refused(sandbox, demo, tmp_path):
    input_dir, _ = demo
    limits = Limits(wall_seconds=3, gpu=True)
    result = sandbox.run(_spec(EXAMPLES / "raw32", input_dir, tmp_path, limits=limits))
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason.startswith("the local sandbox has no GPU")


def test_spec_that_cannot_run_raises(sandbox, demo, tmp_path):
    input_dir, _ = demo
    with pytest.raises(SandboxConfigError, match="field 'image': value '.*nowhere' is not a "
                                                 "selector directory"):
        sandbox.run(_spec(tmp_path / "nowhere", input_dir, tmp_path))
    with pytest.raises(SandboxConfigError, match="has no selector.py and the spec gives no"):
        sandbox.run(_spec(tmp_path, input_dir, tmp_path))
    with pytest.raises(SandboxConfigError, match="field 'input_dir': value '.*missing' is not"):
        sandbox.run(_spec(EXAMPLES / "raw32", tmp_path / "missing", tmp_path))
    full = tmp_path / "full"
    full.mkdir()
    (full / "left.txt").write_text("x")
    spec = RunSpec(image=str(EXAMPLES / "raw32"), input_dir=input_dir, output_dir=full)
    with pytest.raises(SandboxConfigError, match="field 'output_dir'.*must be an existing empty"):
        sandbox.run(spec)


def test_kill_all_refuses_unless_pid_one_of_its_namespace():
    """The guard that keeps `kill(-1)` inside the sandbox, tried where a failure is harmless:
    as PID 2 of a throwaway PID namespace."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import nsinit\n"
            "try:\n    nsinit._kill_all()\nexcept nsinit.SetupError as exc:\n    print(exc)\n")
    done = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "--", "sh", "-c",
                           f'"{sys.executable}" -I -S -c "$0" "$1"; true', code,
                           str(Path(nsinit.__file__).parent)],
                          capture_output=True, text=True, timeout=30)
    assert done.stdout == ("refusing to kill all processes: not PID 1 of a new PID "
                           "namespace\n"), done.stderr


def test_binds_are_read_only_even_over_world_writable_host_directories(sandbox, demo, tmp_path,
                                                                       contained):
    """/input and /selector must be read-only mounts, not just unwritable by ownership:
    here the host directories are 0777, so only the mount flag stops a plant."""
    input_dir = tmp_path / "open-input"
    shutil.copytree(demo[0], input_dir)
    selector = tmp_path / "open-selector"
    shutil.copytree(HOSTILE / "plant", selector)
    for directory in (input_dir, input_dir / "library", selector):
        directory.chmod(0o777)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = sandbox.run(_spec(selector, input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    assert "PLANTED" not in result.stdout_tail, result.stdout_tail
    assert result.stdout_tail.count("Read-only file system") == 6, result.stdout_tail
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "out-" not in str(p))
    assert after == [p for p in before if "out-" not in str(p)]
