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

from sandbox import cgroups, defaults, local, workdir
from sandbox.base import Limits, RunSpec, RunStatus, SandboxConfigError
from sandbox.local import LocalSandbox
from sandbox.workdir import reap
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
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
    result = _run(LocalSandbox(cgroup=True), selector, demo[0], tmp_path, limits)
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
    result = _run(LocalSandbox(cgroup=True), selector, demo[0], tmp_path, limits)
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
    from sandbox.docker_backend import DockerSandbox

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


# ------------------------------------------------------------------ the sandbox's own checks


@local_sandbox
@pytest.mark.parametrize("uid", [0, -1, True, "5", 1.5])
def test_a_uid_that_is_no_positive_integer_is_refused(tmp_path, uid):
    with pytest.raises(SandboxConfigError) as refused:
        LocalSandbox(uid=uid, work_root=tmp_path / "w")
    assert str(refused.value) == f"local sandbox: uid {uid!r} must be a positive integer"


@local_sandbox
def test_uid_one_is_a_uid(tmp_path):
    sandbox = LocalSandbox(uid=1, work_root=tmp_path / "w", cgroup=False)
    try:
        assert sandbox.uid == 1
    finally:
        sandbox.close()


@local_sandbox
@pytest.mark.parametrize("tool", ["unshare", "setpriv"])
def test_a_missing_tool_is_named(tmp_path, monkeypatch, tool):
    which = shutil.which
    monkeypatch.setattr(local.shutil, "which", lambda name: None if name == tool else which(name))
    with pytest.raises(SandboxConfigError) as refused:
        LocalSandbox(work_root=tmp_path / "w")
    assert str(refused.value) == f"local sandbox: the '{tool}' program is not installed"


@local_sandbox
def test_without_a_cgroup_a_required_one_is_refused_and_a_wished_one_warned_about(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(local.cgroups, "available", lambda: None)
    with pytest.raises(SandboxConfigError) as refused:
        LocalSandbox(cgroup=True, work_root=tmp_path / "w")
    assert str(refused.value) == ("local sandbox: no cgroup with memory, pids and cpu controllers "
                                  "can be made on this host")
    caplog.set_level("WARNING", logger="sandbox.local")
    for cgroup, warned in ((False, []), (None, [
            "local sandbox: no cgroup can be made here; selector runs are single-process so "
            "that their memory and CPU limits hold"])):
        caplog.clear()
        sandbox = LocalSandbox(cgroup=cgroup, work_root=tmp_path / "w")
        sandbox.close()
        assert sandbox.cgroup is False
        assert [r.getMessage() for r in caplog.records if r.name == "sandbox.local"] == warned


def test_a_claim_in_progress_is_named_so_that_no_reaper_takes_it(tmp_path, monkeypatch):
    """The directory is made as `.new-*` (never reaped: a reaper skips all but `w-*`) and
    renamed once its lock is held."""
    made = []
    mkdtemp = workdir.tempfile.mkdtemp
    monkeypatch.setattr(workdir.tempfile, "mkdtemp",
                        lambda **kwargs: made.append(kwargs.get("prefix")) or mkdtemp(**kwargs))
    worker = workdir.WorkerDir.claim(tmp_path / "base")
    try:
        assert made == [".new-"] and worker.path.name.startswith(workdir.PREFIX)
    finally:
        worker.close()


def _refusal(reason: str) -> str:
    return (f"local sandbox: field 'work_root': the directory is refused: {reason}; it must be a "
            f"directory of this user (uid {os.geteuid()}) with mode 0700")


@local_sandbox
def test_a_base_that_others_could_have_filled_is_refused_in_its_words(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    plain = tmp_path / "file"
    plain.write_text("")
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # writable by others, not sticky
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)  # like /tmp: others cannot rename what is in it
    for base, reason in ((link, "it is a symbolic link"), (plain, "it is not a directory"),
                         (open_parent / "base", "a directory above it is writable by others")):
        with pytest.raises(SandboxConfigError) as refused:
            workdir.secure_base(base)
        assert str(refused.value) == _refusal(reason)
    assert workdir.secure_base(sticky / "base") == sticky / "base"
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o755)
    os.chown(foreign, 4321, 4321)  # a directory above, of another user: could rename the base
    with pytest.raises(SandboxConfigError) as refused:
        workdir.secure_base(foreign / "base")
    assert str(refused.value) == _refusal("a directory above it belongs to uid 4321")


@local_sandbox
def test_a_users_base_may_lie_in_directories_of_root(tmp_path, monkeypatch):
    """Directories above the base belong to root or to this user (here uid 1234)."""
    base = tmp_path / "users"
    base.mkdir(mode=0o700)
    os.chown(base, 1234, 1234)
    monkeypatch.setattr(workdir.os, "geteuid", lambda: 1234)
    assert workdir.secure_base(base) == base


def test_a_claimed_directory_holds_a_private_lock_and_readable_folders(tmp_path):
    old = os.umask(0)
    try:
        worker = workdir.WorkerDir.claim(tmp_path / "base")
    finally:
        os.umask(old)
    try:
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in worker.path.iterdir()}
        assert modes == {"lock": 0o600, "runs": 0o755, "sandboxes": 0o755}
    finally:
        worker.close()


def _debris_dir(base: Path, name: str, records: dict[str, str]) -> Path:
    directory = base / name
    (directory / "sandboxes").mkdir(parents=True)
    for record, text in records.items():
        (directory / "sandboxes" / record).write_text(text)
    return directory


def _sleeper_record(stack: list) -> str:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stack.append(sleeper)
    return json.dumps({"pid": sleeper.pid, "start": workdir.process_start(sleeper.pid), "cgroups": []})


@local_sandbox
def test_the_reaper_goes_on_past_what_it_skips_and_touches_only_dead_workers_dirs(
        tmp_path, monkeypatch, caplog):
    """In name order: a live worker's directory, one whose lock cannot be opened, a dead one
    with an unreadable record before a good one; then what is no worker's directory (no
    `w-` prefix, a link named like one, a file). Only the dead one goes, its sandbox killed."""
    import fcntl

    base = tmp_path / "base"
    base.mkdir(mode=0o700)
    monkeypatch.setattr(workdir, "base_dir", lambda: base)  # reap() reads the default base
    stack: list = []
    try:
        live = _debris_dir(base, "w-0-live", {"x.json": _sleeper_record(stack)})
        lock = os.open(live / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        odd = _debris_dir(base, "w-1-odd", {"x.json": _sleeper_record(stack)})
        (odd / "lock").mkdir()  # opening it fails: skipped, not the end of the reap
        _debris_dir(base, "w-2-dead", {"a.json": "{not json", "b.json": _sleeper_record(stack)})
        elsewhere = _debris_dir(tmp_path, "elsewhere", {"x.json": _sleeper_record(stack)})
        (base / "w-3-link").symlink_to(elsewhere)
        other = _debris_dir(base, "other", {"x.json": _sleeper_record(stack)})
        (base / "w-4-file").write_text("")
        caplog.set_level("WARNING", logger="sandbox.workdir")
        assert workdir.reap() == ["w-2-dead"]
        assert stack[2].wait(timeout=10) == -9  # the dead worker's sandbox (its good record)
        assert [p.poll() for i, p in enumerate(stack) if i != 2] == [None] * 4
        assert sorted(p.name for p in base.iterdir()) == ["other", "w-0-live", "w-1-odd", "w-3-link",
                                                         "w-4-file"]
        assert elsewhere.is_dir() and other.is_dir()
        assert [r.getMessage() for r in caplog.records if r.name == "sandbox.workdir"] == [
            "removed 1 directories of dead selector workers and stopped their sandboxes"]
        os.close(lock)
    finally:
        for proc in stack:
            proc.kill()
            proc.wait()


def test_an_oom_kill_is_read_from_either_versions_counters(tmp_path):
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    v2.mkdir()
    v1.mkdir()
    group2, group1 = cgroups.RunCgroup(2, {"memory": v2}), cgroups.RunCgroup(1, {"memory": v1})
    assert not group2.oom_killed() and not group1.oom_killed()  # no file: nothing known
    for text, killed in (("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n", True),
                         ("low 0\noom 2\noom_kill 0\n", False), ("low 0\n", False)):
        (v2 / "memory.events").write_text(text)
        (v1 / "memory.oom_control").write_text(text.replace("low", "under_oom"))
        assert (group2.oom_killed(), group1.oom_killed()) == (killed, killed), text
    (v1 / "memory.events").write_text("oom_kill 1\n")  # a v1 group reads only its own file
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not group1.oom_killed()
    (v2 / "memory.oom_control").write_text("oom_kill 1\n")
    (v2 / "memory.events").write_text("oom_kill 0\n")
    assert not group2.oom_killed()


def test_a_runs_tree_is_a_readable_folder_of_the_workers_runs_and_forgotten_once(tmp_path):
    worker = workdir.WorkerDir.claim(tmp_path / "base")
    old = os.umask(0o077)
    try:
        tree = worker.mkdtemp("run-")
        assert tree.parent == worker.path / "runs" and tree.name.startswith("run-")
        assert stat.S_IMODE(tree.stat().st_mode) == 0o755  # the selector's uid reads it
        record = worker.record_sandbox("expaudit-run-0123456789ab", os.getpid(), ())
        worker.forget(record)
        worker.forget(record)  # gone already (a reaper, a second clean-up): fine
        assert not record.exists()
    finally:
        os.umask(old)
        worker.close()


def test_the_read_only_binds_are_named_by_what_they_are(tmp_path):
    sandbox = LocalSandbox.__new__(LocalSandbox)  # only the binds: no tools, no cgroup needed
    sandbox.python_binds = [("/opt/py", "/opt/py", "the interpreter")]
    (tmp_path / "in").mkdir()
    spec = RunSpec(image=str(tmp_path), input_dir=tmp_path / "in", output_dir=tmp_path)
    system = [(f, f, "a system file") for f in local.SYSTEM_FILES if os.path.exists(f)]
    assert sandbox._ro_binds(spec, tmp_path / "sel") == [
        ("/usr", "/usr", "/usr"), ("/opt/py", "/opt/py", "the interpreter"), *system,
        (str(tmp_path / "sel"), "/selector", "/selector"),
        (str((tmp_path / "in").resolve()), "/input", "/input")]


def _fake_v2_worker(tmp_path: Path, monkeypatch) -> Path:
    """This process in a v2 cgroup `/svc` (a fake tree) that has the controllers, none
    enabled for its children yet."""
    own = tmp_path / "svc"
    own.mkdir()
    for name, text in (("cgroup.controllers", "cpuset cpu memory pids"),
                       ("cgroup.subtree_control", ""), ("cgroup.procs", "")):
        (own / name).write_text(text + "\n")
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/svc"})
    monkeypatch.setattr(cgroups, "_mounts", lambda: {"": tmp_path})
    return own


def test_a_run_cgroup_is_made_private_under_a_worker_cgroup_it_delegates_first(tmp_path,
                                                                               monkeypatch):
    own = _fake_v2_worker(tmp_path, monkeypatch)
    old = os.umask(0)
    try:
        group = cgroups.RunCgroup.create("expaudit-run-0123456789ab", memory_bytes=64 * defaults.MIB,
                                         pids=3, cpus=0.25, cpu_list=[0])
    finally:
        os.umask(old)
    run = own / "expaudit-run-0123456789ab"
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu +cpuset"
    assert group.version == 2 and group.paths == (str(run),)
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert _files(run) == {"cpu.max": "25000 100000", "cpuset.cpus": "0",
                           "memory.max": str(64 * defaults.MIB), "pids.max": "3"}


def test_a_run_cgroup_that_cannot_be_made_says_why_with_the_errno(tmp_path, monkeypatch):
    def create():
        return cgroups.RunCgroup.create("expaudit-run-0123456789ab", memory_bytes=64 * defaults.MIB,
                                        pids=3, cpus=0.25, cpu_list=[0])

    for raised, code, words in (
            (None, errno.ENOTSUP, "no cgroup with memory, pids and cpu can be made"),
            (PermissionError(errno.EACCES, "Permission denied"), errno.EACCES,
             "cannot delegate the worker's cgroup: Permission denied"),
            (OSError("no errno"), errno.EIO, None)):  # no errno of its own: EIO
        def layout(delegate=False, raised=raised):
            if raised is not None:
                raise raised
            return None

        monkeypatch.setattr(cgroups, "_layout", layout)
        with pytest.raises(cgroups.CgroupError) as failed:
            create()
        assert failed.value.errno == code and words in (None, failed.value.strerror)
    monkeypatch.setattr(cgroups, "_layout", lambda delegate=False: (2, {"memory": tmp_path / "gone"}))
    with pytest.raises(cgroups.CgroupError) as failed:
        create()
    assert (failed.value.errno, failed.value.strerror) == (
        errno.ENOENT, "cannot set up the run's cgroup: No such file or directory")


def test_what_a_run_exposes_is_named_for_the_reader(tmp_path):
    sandbox = LocalSandbox.__new__(LocalSandbox)
    sandbox.python_binds = [("/opt/py", "/opt/py", "the interpreter")]
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    spec = RunSpec(image=str(tmp_path), input_dir=tmp_path / "in", output_dir=tmp_path / "out")
    system = [(f, "a system file") for f in local.SYSTEM_FILES if os.path.exists(f)]
    assert sandbox.exposed(spec, tmp_path / "sel") == [
        ("/usr", "the bind of /usr"), ("/opt/py", "the interpreter's installation"), *system,
        (str(tmp_path / "sel"), "the selector directory"),
        (str((tmp_path / "in").resolve()), "the /input directory"),
        (str((tmp_path / "out").resolve()), "the /output directory")]
