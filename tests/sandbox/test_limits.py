"""Run-wide limits of the local sandbox, its setup failures, and where its interpreter lives.

Each attack is a real selector in a real sandbox: memory split over several
processes, CPU pinning undone from inside, an interpreter under /tmp (which
the sandbox's own /tmp used to hide), and a sandbox that cannot be built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import cgroups, defaults
from sandbox.base import Limits, RunSpec, RunStatus
from sandbox.execute import run_selector
from sandbox.local import LocalSandbox
from tests.support.paths import HOSTILE_SELECTORS

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")

HOSTILE = HOSTILE_SELECTORS
LIMITS = Limits(wall_seconds=10, memory_bytes=256 * defaults.MIB, pids=16, cpus=1,
                output_bytes=8 * defaults.MIB, tmp_bytes=8 * defaults.MIB)
needs_cgroups = pytest.mark.skipif(cgroups.available() is None,
                                   reason="no cgroup can be made on this host")

STDLIB_SELECTOR = """\
import csv, json, os
setting = json.load(open("/input/setting.json"))
with open("/output/scores.csv", "w", newline="") as handle:
    out = csv.writer(handle)
    out.writerow(["scene_id", "experience_id", "score"])
    for j, scene in enumerate(setting["scene_ids"]):
        for i, experience in enumerate(setting["experience_ids"]):
            out.writerow([scene, experience, repr(float(j % len(setting["experience_ids"]) == i))])
"""


def _spec(image: Path, input_dir: Path, tmp_path: Path, limits: Limits = LIMITS) -> RunSpec:
    out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    return RunSpec(image=str(image), input_dir=input_dir, output_dir=out, limits=limits)


def _stdlib_selector(tmp_path: Path) -> Path:
    selector = tmp_path / "stdlib-selector"
    selector.mkdir(mode=0o755)
    (selector / "selector.py").write_text(STDLIB_SELECTOR)
    (selector / "selector.py").chmod(0o644)
    return selector


# ------------------------------------------------------------------ run-wide limits


@needs_cgroups
def test_memory_split_over_processes_stops_at_the_limit(demo, tmp_path):
    """Four processes of 200 MiB each under a 256 MiB limit: each is under RLIMIT_AS,
    together they are over the run's limit."""
    input_dir, _ = demo
    result = LocalSandbox().run(_spec(HOSTILE / "memfork", input_dir, tmp_path))
    assert result.status is RunStatus.OOM, (result.reason, result.stdout_tail)
    assert f"memory limit of {256 * defaults.MIB} bytes" in result.reason
    assert "4 processes hold 200 MiB each" not in result.stdout_tail


@needs_cgroups
def test_cpu_pinning_cannot_be_undone_from_inside(demo, tmp_path):
    input_dir, _ = demo
    result = LocalSandbox().run(_spec(HOSTILE / "affinity", input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    line = result.stdout_tail.strip().splitlines()[-1]
    before, after = line.removeprefix("cpus before ").split(" after ")
    assert before == after and len(eval(after)) == LIMITS.cpu_count, line  # noqa: S307


@needs_cgroups
def test_run_cgroup_carries_the_limits(demo, tmp_path):
    """The kernel holds the run's memory, pids and CPU limits; the cgroup goes with the run."""
    group = cgroups.RunCgroup.create("expaudit-test-probe", memory_bytes=300 * defaults.MIB,
                                     pids=7, cpus=0.5, cpu_list=[min(os.sched_getaffinity(0))])
    try:
        assert group.settings() == {"memory": 300 * defaults.MIB, "pids": 7, "cpu_quota": 0.5,
                                    "cpus": [min(os.sched_getaffinity(0))]}
    finally:
        group.remove()
    assert not any(Path(p).exists() for p in group.paths)
    input_dir, _ = demo
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o755)
    (probe / "selector.py").write_text("print(open('/proc/self/cgroup').read())\n")
    (probe / "selector.py").chmod(0o644)
    result = LocalSandbox().run(_spec(probe, input_dir, tmp_path))
    assert result.status is RunStatus.OK, result.stderr_tail
    joined = _run_cgroup_dirs(result.stdout_tail, cgroups._mounts())
    assert joined, result.stdout_tail
    assert all(path.parent.is_dir() for path in joined), joined  # real places, now empty
    assert [path for path in joined if path.exists()] == []


def _run_cgroup_dirs(proc_cgroup: str, mounts: dict[str, Path]) -> list[Path]:
    """The directories of the run's cgroups named in a `/proc/self/cgroup` text: v1 lines
    (`4:memory:/path`) under their controller's mount, v2 lines (`0::/path`) under the
    unified one (`mounts` as `cgroups._mounts` gives them)."""
    dirs = []
    for line in proc_cgroup.split():
        _, controllers, path = line.split(":", 2)
        if "expaudit-run-" in path:
            for name in controllers.split(",") if controllers else [""]:
                dirs.append(mounts[name] / path.lstrip("/"))
    return dirs


def test_run_cgroup_dirs_of_either_version(tmp_path):
    """v2 paths hang directly under the unified mount (no controller directory)."""
    text = "0::/system.slice/w/expaudit-run-0123456789ab\n4:memory,pids:/expaudit-run-x\n"
    mounts = {"": tmp_path, "memory": tmp_path / "memory", "pids": tmp_path / "pids"}
    assert _run_cgroup_dirs(text, mounts) == [
        tmp_path / "system.slice/w/expaudit-run-0123456789ab",
        tmp_path / "memory/expaudit-run-x", tmp_path / "pids/expaudit-run-x"]


def test_without_a_cgroup_the_run_is_single_process(demo, tmp_path):
    """Where no cgroup can be made the sandbox runs one process: the memory limit per
    process is then the limit of the whole run."""
    input_dir, _ = demo
    sandbox = LocalSandbox(cgroup=False)
    result = sandbox.run(_spec(HOSTILE / "memfork", input_dir, tmp_path))
    assert result.status is RunStatus.PIDS_LIMIT, (result.reason, result.stdout_tail)
    assert "pids limit of 1 reached" in result.reason
    selector = _stdlib_selector(tmp_path)
    assert sandbox.run(_spec(selector, input_dir, tmp_path)).status is RunStatus.OK


# ------------------------------------------------------------------ where the interpreter lives


def _venv_under_tmp(tmp_path: Path) -> Path:
    """A virtual environment of the running Python under /tmp (pytest's tmp_path)."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "clone" / ".venv"
    base = Path(sys.base_prefix) / "bin" / "python{}.{}".format(*sys.version_info[:2])
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    for path in (tmp_path, tmp_path / "clone"):
        path.chmod(0o755)
    return venv / "bin" / "python"


def test_interpreter_in_a_venv_under_tmp_runs_the_selector(demo, tmp_path):
    input_dir, setting = demo
    python = _venv_under_tmp(tmp_path)
    spec = _spec(_stdlib_selector(tmp_path), input_dir, tmp_path)
    run = run_selector(LocalSandbox(python=str(python)), spec, setting.experience_ids,
                       setting.scene_ids)
    assert run.result.status is RunStatus.OK, (run.result.reason, run.result.stderr_tail)
    assert run.scores.scores.shape == (3, 6)


def test_venv_packages_not_visible_inside_are_a_setup_failure(demo, tmp_path):
    """The venv's site-packages is a link to a directory the sandbox does not mount:
    Python starts without site, so a check with -S passed and the selector then
    crashed on its first import (blamed on the submitter). The check starts Python
    as the selector's starts, and finds the packages missing."""
    input_dir, _ = demo
    python = _venv_under_tmp(tmp_path)
    site_dir = next((python.parent.parent / "lib").glob("python*/site-packages"))
    (site_dir / "venv_only_module.py").write_text("VALUE = 1\n")
    selector = tmp_path / "imports"
    selector.mkdir(mode=0o755)
    (selector / "selector.py").write_text("import venv_only_module\n" + STDLIB_SELECTOR)
    (selector / "selector.py").chmod(0o644)
    assert LocalSandbox(python=str(python)).run(
        _spec(selector, input_dir, tmp_path)).status is RunStatus.OK
    elsewhere = tmp_path / "elsewhere"
    site_dir.rename(elsewhere)
    site_dir.symlink_to(elsewhere)  # on the host the venv still works
    assert subprocess.run([str(python), "-c", "import venv_only_module"]).returncode == 0
    result = LocalSandbox(python=str(python)).run(_spec(selector, input_dir, tmp_path))
    assert result.status is RunStatus.SETUP_FAILED, (result.reason, result.stderr_tail)
    assert result.reason == "could not build the sandbox: the interpreter does not start inside"


def test_interpreter_missing_inside_is_a_setup_failure_without_host_paths(demo, tmp_path,
                                                                         monkeypatch):
    """The service's interpreter not starting is the service's failure, not the selector's."""
    input_dir, _ = demo
    python = _venv_under_tmp(tmp_path)
    sandbox = LocalSandbox(python=str(python))
    monkeypatch.setattr(sandbox, "python_binds", [])  # the venv is not mounted inside
    result = sandbox.run(_spec(_stdlib_selector(tmp_path), input_dir, tmp_path))
    assert result.status is RunStatus.SETUP_FAILED, (result.reason, result.stderr_tail)
    shown = str(result.to_dict())
    assert str(tmp_path) not in shown and "/tmp/" not in shown, shown
    assert result.reason == "could not build the sandbox: the interpreter does not start inside"


def test_mount_failure_is_a_setup_failure_without_host_paths(demo, tmp_path, monkeypatch):
    input_dir, _ = demo
    sandbox = LocalSandbox()
    missing = tmp_path / "vanished"
    original = sandbox._config

    def config(*args, **kwargs):
        cfg = original(*args, **kwargs)
        cfg["ro_binds"].append([str(missing), str(missing), "the interpreter"])
        return cfg

    monkeypatch.setattr(sandbox, "_config", config)
    result = sandbox.run(_spec(_stdlib_selector(tmp_path), input_dir, tmp_path))
    assert result.status is RunStatus.SETUP_FAILED
    assert result.reason == ("could not build the sandbox: cannot mount the interpreter: "
                             "No such file or directory")
    shown = str(result.to_dict())
    assert str(tmp_path) not in shown and "/tmp/" not in shown, shown
