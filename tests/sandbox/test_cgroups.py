"""Where the local sandbox makes its runs' cgroups (`sandbox.cgroups._layout`).

Only path logic is tested here, on a directory laid out like a cgroup v2 tree
(files holding what the kernel's would): this host's hierarchy is v1, and the
decision must not depend on which one the test machine has. A run's cgroup
must never be made above the worker's own, where it would escape the limits
put on the worker.
"""

from __future__ import annotations

import errno
from pathlib import Path

from sandbox import cgroups

ALL = "cpuset cpu io memory pids"


def _tree(root: Path, groups: dict[str, dict[str, str]]) -> dict[str, Path]:
    """A fake v2 hierarchy under `root`: cgroup path -> {file: content}."""
    for group, files in groups.items():
        directory = root / group.lstrip("/")
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text + "\n")
    return {"": root}


def test_run_cgroups_never_go_above_the_worker(tmp_path):
    """The worker's cgroup was not given memory: the old layout put runs beside it,
    under its parent (outside its limits); now runs are single-process."""
    mounts = _tree(tmp_path, {
        "/": {"cgroup.controllers": ALL, "cgroup.subtree_control": ALL},
        "/svc": {"cgroup.controllers": ALL, "cgroup.subtree_control": ALL},
        "/svc/worker": {"cgroup.controllers": "cpu pids", "cgroup.subtree_control": "",
                        "cgroup.procs": "41"},
    })
    assert cgroups._layout({"": "/svc/worker"}, mounts) is None


def test_a_worker_with_processes_delegates_through_a_leaf(tmp_path):
    """The worker's cgroup has the controllers but holds processes: its processes move
    into `<own>/expaudit-worker` and runs are made in `<own>`, under its limits."""
    mounts = _tree(tmp_path, {
        "/": {"cgroup.controllers": ALL, "cgroup.subtree_control": ALL},
        "/svc": {"cgroup.controllers": ALL, "cgroup.subtree_control": ALL},
        "/svc/worker": {"cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": "",
                        "cgroup.procs": "41\n42"},
    })
    own = tmp_path / "svc" / "worker"
    planned = {"memory": own, "pids": own, "cpu": own}
    assert cgroups._layout({"": "/svc/worker"}, mounts) == (2, planned)
    assert (own / "cgroup.subtree_control").read_text() == "\n"  # deciding changes nothing
    assert cgroups._layout({"": "/svc/worker"}, mounts, delegate=True) == (2, planned)
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    # once moved (this process or a worker started by it), runs still go in <own>
    (own / "cgroup.subtree_control").write_text("cpu memory pids\n")
    leaf_path = f"/svc/worker/{cgroups.WORKER_LEAF}"
    assert cgroups._layout({"": leaf_path}, mounts) == (2, planned)


def test_the_root_cgroup_delegates_directly(tmp_path):
    mounts = _tree(tmp_path, {"/": {"cgroup.controllers": ALL,
                                    "cgroup.subtree_control": "cpuset cpu memory pids"}})
    assert cgroups._layout({"": "/"}, mounts) == (
        2, {name: tmp_path for name in ("memory", "pids", "cpu", "cpuset")})


def test_v1_runs_go_in_the_workers_own_groups(tmp_path):
    mounts = {name: tmp_path / name for name in ("memory", "pids", "cpu", "cpuset")}
    mounts[""] = tmp_path / "unified"
    own = {"memory": "/a", "pids": "/", "cpu": "/b", "cpuset": "/", "": "/"}
    assert cgroups._layout(own, mounts) == (1, {
        "memory": tmp_path / "memory" / "a", "pids": tmp_path / "pids",
        "cpu": tmp_path / "cpu" / "b", "cpuset": tmp_path / "cpuset"})


def _kernel_write(monkeypatch, root: Path, own: Path) -> None:
    """Give the fake tree two rules of the kernel: a cgroup other than the root that
    holds processes cannot enable controllers for its children (EBUSY), and writing a
    pid to a `cgroup.procs` takes it out of its old cgroup (`own`)."""
    write = cgroups._write

    def kernel_write(path: Path, value: str) -> None:
        if path.name == "cgroup.subtree_control" and path.parent != root \
                and path.with_name("cgroup.procs").read_text().split():
            raise OSError(errno.EBUSY, "Device or resource busy")
        if path.name == "cgroup.procs":
            old = own / "cgroup.procs"
            old.write_text("\n".join(p for p in old.read_text().split() if p != value))
            value = "\n".join([*path.read_text().split(), value]) if path.exists() else value
        write(path, value)

    monkeypatch.setattr(cgroups, "_write", kernel_write)


def test_delegation_moves_the_workers_processes_first(tmp_path, monkeypatch):
    mounts = _tree(tmp_path, {
        "/svc": {"cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": "",
                 "cgroup.procs": "41\n42"},
    })
    own = tmp_path / "svc"
    _kernel_write(monkeypatch, tmp_path, own)
    assert cgroups._layout({"": "/svc"}, mounts, delegate=True) == (
        2, {"memory": own, "pids": own, "cpu": own})
    assert (own / cgroups.WORKER_LEAF / "cgroup.procs").read_text().split() == ["41", "42"]
    assert (own / "cgroup.procs").read_text().split() == []
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"


def test_the_root_cgroup_keeps_its_processes(tmp_path, monkeypatch):
    """The root may hold processes and delegate: nothing of the host is moved."""
    mounts = _tree(tmp_path, {"/": {"cgroup.controllers": ALL, "cgroup.subtree_control": "",
                                    "cgroup.procs": "1\n2\n41"}})
    _kernel_write(monkeypatch, tmp_path, tmp_path)
    assert cgroups._layout({"": "/"}, mounts, delegate=True) == (
        2, {name: tmp_path for name in ("memory", "pids", "cpu", "cpuset")})
    assert not (tmp_path / cgroups.WORKER_LEAF).exists()
    assert (tmp_path / "cgroup.procs").read_text().split() == ["1", "2", "41"]
