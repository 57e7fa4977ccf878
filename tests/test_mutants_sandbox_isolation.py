"""What mutation testing of the sandbox's isolation found unchecked: the limits a run's
cgroup really holds (against docs/selector_protocol.md and the run's own limits), the CPU
share a selector really gets, and the reaper's refusal of a cgroup that is named like a
run's but lies where no run is made."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from runner.sandbox import cgroups, defaults, local, workdir
from runner.sandbox.base import Limits, RunSpec, RunStatus, SandboxConfigError
from runner.sandbox.demo import demo_input
from runner.sandbox.local import LocalSandbox
from runner.sandbox.workdir import reap

REPO = Path(__file__).resolve().parents[1]
local_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="the local sandbox needs root, unshare and setpriv")
needs_cgroups = pytest.mark.skipif(os.geteuid() != 0 or cgroups.available() is None,
                                   reason="no cgroup can be made on this host")

SPIN = """\
import time
start, cpu = time.monotonic(), time.process_time()
while time.monotonic() - start < {seconds}:
    pass
print(time.process_time() - cpu, time.monotonic() - start)
"""


def _spec_defaults() -> dict[str, str]:
    """The default column of the limits table of docs/selector_protocol.md."""
    text = (REPO / "docs" / "selector_protocol.md").read_text()
    rows = re.findall(r"^\| (wall clock|memory|pids|CPUs) \| ([^|]+) \|", text, re.M)
    return {name: value.strip() for name, value in rows}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    directory = tmp_path_factory.mktemp("input") / "input"
    demo_input(directory)
    return directory


def _selector(tmp_path: Path, code: str) -> Path:
    selector = tmp_path / f"selector-{time.monotonic_ns()}"
    selector.mkdir(mode=0o755)
    (selector / "selector.py").write_text(code)
    (selector / "selector.py").chmod(0o644)
    return selector


def _run(sandbox: LocalSandbox, selector: Path, demo: Path, tmp_path: Path, limits: Limits):
    out = tmp_path / f"out-{time.monotonic_ns()}"
    out.mkdir()
    return sandbox.run(RunSpec(image=str(selector), input_dir=demo, output_dir=out, limits=limits))


@pytest.fixture
def seen(monkeypatch):
    """What each run's cgroup holds right after it is made, and each sandbox config's rlimits."""
    found: dict[str, list] = {"cgroup": [], "rlimits": []}
    create, config = cgroups.RunCgroup.create, LocalSandbox._config

    def spy_create(name, **kwargs):
        group = create(name, **kwargs)
        found["cgroup"].append(group.settings())
        return group

    def spy_config(self, *args, **kwargs):
        cfg = config(self, *args, **kwargs)
        found["rlimits"].append(cfg["rlimits"])
        return cfg

    monkeypatch.setattr(cgroups.RunCgroup, "create", spy_create)
    monkeypatch.setattr(LocalSandbox, "_config", spy_config)
    return found


def test_the_documented_defaults_are_the_sandboxes_defaults():
    documented = _spec_defaults()
    assert documented["pids"] == str(defaults.PIDS) == "64"
    assert documented["CPUs"] == f"{defaults.CPUS:g}" == "2"
    assert documented["memory"] == f"{defaults.MEMORY_BYTES >> 30} GiB"
    assert (Limits().pids, Limits().cpus, Limits().memory_bytes) == (
        defaults.PIDS, defaults.CPUS, defaults.MEMORY_BYTES)


@local_sandbox
@needs_cgroups
@pytest.mark.parametrize("limits", [
    Limits(wall_seconds=20),  # the documented defaults
    Limits(wall_seconds=20, memory_bytes=300 * defaults.MIB, pids=7, cpus=0.5),
    Limits(wall_seconds=20, memory_bytes=200 * defaults.MIB, pids=23, cpus=1.5),
], ids=["defaults", "half-a-cpu", "one-and-a-half-cpus"])
def test_a_runs_cgroup_holds_exactly_the_runs_limits(demo, tmp_path, seen, limits):
    """pids.max is the run's pids, the CPU quota its cpus (a share of the period, not a whole
    CPU per core it may use) and the CPU set its first ceil(cpus) cores (docs/selector_protocol.md,
    "Limits"); RLIMIT_NPROC, RLIMIT_AS and RLIMIT_CPU (cpus x wall) go with them."""
    selector = _selector(tmp_path, "print('ran')\n")
    result = _run(LocalSandbox(cgroup=True), selector, demo, tmp_path, limits)
    assert result.status is RunStatus.OK, (result.reason, result.stderr_tail)
    cores = sorted(os.sched_getaffinity(0))[:math.ceil(limits.cpus)]
    assert seen["cgroup"] == [{"memory": limits.memory_bytes, "pids": limits.pids,
                               "cpu_quota": limits.cpus, "cpus": cores}]
    assert seen["rlimits"] == [{"AS": limits.memory_bytes, "NPROC": limits.pids,
                                "FSIZE": limits.output_bytes, "NOFILE": defaults.OPEN_FILES,
                                "CORE": 0, "CPU": int(limits.cpus * limits.wall_seconds) + 1}]


@local_sandbox
@needs_cgroups
def test_a_selector_limited_to_half_a_cpu_gets_no_more_than_half(demo, tmp_path):
    """Measured from inside: a selector spinning for 1.5 s under cpus=0.5 gets about 0.75 s of
    CPU (throttled every 100 ms period); with a whole CPU it would get up to 1.5 s. A busy
    host can only lower the share, so the bound cannot fail for that reason."""
    selector = _selector(tmp_path, SPIN.format(seconds=1.5))
    limits = Limits(wall_seconds=20, memory_bytes=256 * defaults.MIB, pids=4, cpus=0.5)
    result = _run(LocalSandbox(cgroup=True), selector, demo, tmp_path, limits)
    assert result.status is RunStatus.OK, (result.reason, result.stderr_tail)
    cpu, wall = map(float, result.stdout_tail.split())
    assert wall >= 1.5
    assert cpu / wall < 0.7, (cpu, wall)


# ------------------------------------------------------------------ the reaper


def test_a_recorded_cgroup_counts_as_a_runs_only_where_runs_are_made(tmp_path, monkeypatch):
    """Named like a run's is not enough: the cgroup must lie directly in a directory where
    this process makes its runs' cgroups, each path of a record on its own."""
    runs = tmp_path / "runs"
    monkeypatch.setattr(cgroups, "run_parents", lambda: {runs})
    name = "expaudit-run-0123456789ab"
    group = cgroups.from_paths([str(runs / name)])
    assert group is not None and group.paths == (str(runs / name),)
    for elsewhere in (tmp_path / "other" / name, runs / "expaudit-bystander" / name,
                      Path("/") / name):
        assert cgroups.from_paths([str(elsewhere)]) is None, elsewhere
    assert cgroups.from_paths([str(runs / "expaudit-bystander")]) is None
    assert cgroups.from_paths([str(runs / ".." / "runs" / name)]) is None
    assert cgroups.from_paths(["runs/" + name]) is None
    assert cgroups.from_paths([]) is None


def _cgroup_with_sleeper(path: Path, stack: list) -> subprocess.Popen:
    path.mkdir()
    stack.append(path)
    sleeper = subprocess.Popen(["sleep", "60"])
    stack.append(sleeper)
    (path / "cgroup.procs").write_text(str(sleeper.pid))
    return sleeper


def _debris(base: Path, name: str, cgroup_paths: list[str]) -> Path:
    """A dead worker's directory (no lock) whose one record names `cgroup_paths`."""
    planted = base / f"w-1-{name}"
    (planted / "sandboxes").mkdir(parents=True)
    record = {"pid": None, "start": None, "cgroups": cgroup_paths}
    (planted / "sandboxes" / "x.json").write_text(json.dumps(record))
    return planted


@local_sandbox
@needs_cgroups
def test_the_reaper_spares_a_cgroup_named_like_a_run_outside_the_runs_directories(tmp_path):
    """A record naming, alone, a cgroup named like a run's but inside another cgroup (where
    no run is made) removes nothing and kills nothing; a record naming a real run's place
    does (the control: the same reap, the same kind of process)."""
    parent = sorted(cgroups.run_parents())[0]
    stack: list = []
    try:
        outer = parent / f"expaudit-bystander-{os.getpid()}"
        outer.mkdir()
        stack.append(outer)
        bystander = outer / cgroups.run_name()
        spared = _cgroup_with_sleeper(bystander, stack)
        run = parent / cgroups.run_name()
        reaped = _cgroup_with_sleeper(run, stack)
        base = tmp_path / "own"
        base.mkdir(mode=0o700)
        planted = [_debris(base, "bystander", [str(bystander)]), _debris(base, "run", [str(run)])]
        assert sorted(reap(base)) == sorted(p.name for p in planted)
        assert reaped.wait(timeout=10) == -9 and not run.exists()
        assert spared.poll() is None
        assert (bystander / "cgroup.procs").read_text().split() == [str(spared.pid)]
    finally:
        for item in reversed(stack):
            if isinstance(item, Path):
                if item.exists():
                    item.rmdir()
            else:
                item.kill()
                item.wait()


# ------------------------------------------------------------------ either cgroup version
# This host's hierarchy may be v1 or v2; each version's files are written and read here in a
# directory laid out like that version's (what the kernel would hold), so both are checked.


def _files(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def test_a_v2_cgroup_gets_each_limit_in_its_file_and_gives_it_back(tmp_path):
    run = tmp_path / "expaudit-run-0123456789ab"
    run.mkdir()
    (run / "memory.swap.max").write_text("max")  # present where the kernel has swap accounting
    group = cgroups.RunCgroup(2, {c: run for c in ("memory", "pids", "cpu", "cpuset")})
    group._limit(300 * defaults.MIB, 7, 0.5, [1, 3])
    assert _files(run) == {"cpu.max": "50000 100000", "cpuset.cpus": "1,3",
                           "memory.max": str(300 * defaults.MIB), "memory.swap.max": "0",
                           "pids.max": "7"}
    (run / "cpuset.cpus.effective").write_text("1,3\n")  # what the kernel makes of cpuset.cpus
    assert group.settings() == {"memory": 300 * defaults.MIB, "pids": 7, "cpu_quota": 0.5,
                                "cpus": [1, 3]}
    bare = tmp_path / "bare"  # no swap accounting, no cpuset delegated
    bare.mkdir()
    group = cgroups.RunCgroup(2, {c: bare for c in ("memory", "pids", "cpu")})
    group._limit(64 * defaults.MIB, 2, 0.0001, [0])
    assert _files(bare) == {"cpu.max": "1000 100000", "memory.max": str(64 * defaults.MIB),
                            "pids.max": "2"}  # the smallest quota the kernel takes: 1 ms
    assert group.settings() == {"memory": 64 * defaults.MIB, "pids": 2, "cpu_quota": 0.01,
                                "cpus": []}


def test_a_v1_cgroup_gets_each_limit_in_its_hierarchy_and_gives_it_back(tmp_path):
    dirs = {c: tmp_path / c / "expaudit-run-0123456789ab" for c in ("memory", "pids", "cpu", "cpuset")}
    for directory in dirs.values():
        directory.mkdir(parents=True)
    (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text("-1")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0-1\n")  # the parent's memory nodes
    group = cgroups.RunCgroup(1, dirs)
    group._limit(200 * defaults.MIB, 23, 1.5, [0, 1])
    assert _files(dirs["memory"]) == {"memory.limit_in_bytes": str(200 * defaults.MIB),
                                      "memory.memsw.limit_in_bytes": str(200 * defaults.MIB)}
    assert _files(dirs["pids"]) == {"pids.max": "23"}
    assert _files(dirs["cpu"]) == {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"}
    assert _files(dirs["cpuset"]) == {"cpuset.cpus": "0,1", "cpuset.mems": "0-1"}
    assert group.settings() == {"memory": 200 * defaults.MIB, "pids": 23, "cpu_quota": 1.5,
                                "cpus": [0, 1]}
    del dirs["cpuset"]
    for directory in dirs.values():
        for path in directory.iterdir():
            path.unlink()
    cgroups.RunCgroup(1, dirs)._limit(200 * defaults.MIB, 23, 1.5, [0, 1])
    assert _files(dirs["memory"]) == {"memory.limit_in_bytes": str(200 * defaults.MIB)}
    assert cgroups.RunCgroup(1, dirs).settings()["cpus"] == []


def test_a_cpu_list_is_read_with_its_ranges():
    assert cgroups._cpu_list("0-1,4,6-7\n".strip()) == [0, 1, 4, 6, 7]
    assert cgroups._cpu_list("2-3") == [2, 3]
    assert cgroups._cpu_list("5") == [5]
    assert cgroups._cpu_list("") == []


def _v2_tree(root: Path, groups: dict[str, dict[str, str]]) -> None:
    for group, files in groups.items():
        directory = root / group
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text + "\n")


def test_a_v2_worker_moves_into_its_leaf_only_where_it_must(tmp_path):
    """(where runs go, their controllers, whether the worker must move first)."""
    _v2_tree(tmp_path, {
        "svc": {"cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": "cpu memory pids"},
        "svc/expaudit-worker": {"cgroup.controllers": "", "cgroup.subtree_control": ""},
        "fresh": {"cgroup.controllers": "cpuset cpu memory pids", "cgroup.subtree_control": ""},
        "root": {"cgroup.controllers": "cpu memory pids io", "cgroup.subtree_control": "memory pids cpu"},
    })
    required = ("memory", "pids", "cpu")
    assert cgroups._v2_plan(tmp_path / "svc" / "expaudit-worker") == (tmp_path / "svc", required, False)
    assert cgroups._v2_plan(tmp_path / "root") == (tmp_path / "root", required, False)
    assert cgroups._v2_plan(tmp_path / "fresh") == (tmp_path / "fresh", required + ("cpuset",), True)


def test_delegation_gives_up_naming_why_and_moves_every_process_it_can(tmp_path, monkeypatch):
    """A cgroup whose processes keep coming back stays busy: after `DELEGATE_TRIES` the worker
    gives up with EBUSY; a process gone meanwhile is skipped, not the ones after it; the
    leaf is a 0755 directory whatever the umask."""
    own = tmp_path / "svc"
    own.mkdir()
    (own / "cgroup.procs").write_text("41\n42\n43\n")
    moved: list[str] = []

    def write(path: Path, value: str) -> None:
        if path.name == "cgroup.subtree_control":
            raise OSError(errno.EBUSY, "Device or resource busy")
        if value == "41":
            raise ProcessLookupError(errno.ESRCH, "No such process")
        moved.append(value)

    monkeypatch.setattr(cgroups, "_write", write)
    old = os.umask(0)
    try:
        with pytest.raises(cgroups.CgroupError) as failed:
            cgroups._delegate(own, ("memory", "pids", "cpu"))
    finally:
        os.umask(old)
    assert failed.value.errno == errno.EBUSY
    assert failed.value.strerror == "cannot delegate the worker's cgroup: processes keep joining it"
    assert moved == ["42", "43"] * cgroups.DELEGATE_TRIES
    assert stat.S_IMODE((own / cgroups.WORKER_LEAF).stat().st_mode) == 0o755


# ------------------------------------------------------------------ the interpreter's binds


def test_the_interpreter_is_bound_at_each_of_its_paths_outside_usr(tmp_path, monkeypatch):
    real = tmp_path / "real-venv"
    real.mkdir()
    link = tmp_path / "venv"
    link.symlink_to(real)
    monkeypatch.setattr(local, "_interpreter", lambda python: ((str(link), "/usr/lib/base"), ()))
    assert local.python_binds("python") == [(str(real), str(real), "the interpreter"),
                                            (str(link), str(link), "the interpreter")]


@pytest.mark.parametrize("prefix", ["/", "/tmp", "/input", "/output/x", "/proc", "/etc/py"])
def test_an_interpreter_that_would_cover_a_place_of_the_sandbox_is_refused(monkeypatch, prefix):
    monkeypatch.setattr(local, "_interpreter", lambda python: ((prefix,), ()))
    with pytest.raises(SandboxConfigError, match=f"installation '{prefix}' would cover a place"):
        local.python_binds("python")


# ------------------------------------------------------------------ the workers' directories


def test_the_workers_base_is_roots_under_run_and_a_users_own_under_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(workdir.os, "geteuid", lambda: 0)
    assert workdir.base_dir() == workdir.RUN_BASE == Path("/run/expaudit-workers")
    monkeypatch.setattr(workdir.os, "geteuid", lambda: 1234)
    assert workdir.base_dir() == tmp_path / "expaudit-workers-1234"


def test_closing_a_worker_directory_twice_or_after_it_went_is_harmless(tmp_path):
    worker = workdir.WorkerDir.claim(tmp_path / "base")
    saved = os.dup(1)
    try:
        shutil.rmtree(worker.path)  # removed by someone else (a reaper that misjudged it)
        worker.close()
        worker.close()
        os.fstat(1)  # the second close closed no other descriptor (stdout here)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert not worker.path.exists()


def test_a_docker_setup_failure_has_no_output_and_took_no_time(tmp_path):
    docker = pytest.importorskip("docker")
    from runner.sandbox.docker_backend import DockerSandbox

    class NoImages:
        class images:  # noqa: N801 (the SDK's attribute)
            @staticmethod
            def get(reference):
                raise docker.errors.ImageNotFound(reference)

    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    result = DockerSandbox(NoImages()).run(RunSpec(image="nowhere:1", input_dir=tmp_path / "in",
                                                   output_dir=tmp_path / "out"))
    assert (result.status, result.reason, result.exit_code, result.stdout_tail,
            result.stderr_tail, result.wall_seconds, result.image_digest) == (
        RunStatus.SETUP_FAILED, "image 'nowhere:1' is not on this runner", None, "", "", 0.0, None)
