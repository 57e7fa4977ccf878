"""Issue 30, item 7: service instances sharing a host keep to their own worker directories.

Every instance's workers claimed their sandbox directories in the one
`/run/expaudit-workers`, and each new worker reaped every directory whose lock was free:
another instance's dead workers (47 "removes directories of dead selector workers"
warnings in 15 minutes with three instances). Now each instance claims in
`instance_dir(instance_key(config))`. Seen failing on the old code: starting instance B
removed instance A's dead worker's directory.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import workdir
from sandbox.workdir import WorkerDir
from service.selectors import run as container_jobs
from service.process.config import ServiceConfig
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
SANDBOX_OK = os.geteuid() == 0 and all(
    subprocess.run(["which", tool], capture_output=True).returncode == 0
    for tool in ("unshare", "setpriv"))


class _ClaimingSandbox:
    """Stands in for `LocalSandbox`: claims its worker directory as the real one does
    (`WorkerDir.claim(work_root)`), without needing namespaces."""

    def __init__(self, *, work_root=None, **_kwargs) -> None:
        self.workdir = WorkerDir.claim(work_root)


def _dead_worker(base: Path) -> Path:
    """A worker directory under `base` whose process has died (its lock is free)."""
    code = ("import sys; from pathlib import Path; from sandbox.workdir import WorkerDir;"
            "print(WorkerDir.claim(Path(sys.argv[1])).path)")
    done = subprocess.run([sys.executable, "-c", code, str(base)], capture_output=True,
                          text=True, check=True, cwd=REPO, timeout=60)
    return Path(done.stdout.strip())


@pytest.fixture()
def shared_base(tmp_path, monkeypatch):
    """The host's shared workers directory (`/run/expaudit-workers` for root), here."""
    base = tmp_path / "run" / "expaudit-workers"
    monkeypatch.setattr(workdir, "base_dir", lambda: base)
    monkeypatch.setattr(container_jobs, "LocalSandbox", _ClaimingSandbox)
    return base


def _config(tmp_path: Path, name: str) -> ServiceConfig:
    return ServiceConfig(store=str(tmp_path / name / "store"), sandbox="local")


def test_starting_a_second_instance_leaves_the_first_s_directories_alone(tmp_path, shared_base,
                                                                         caplog):
    first = container_jobs.make_sandbox(_config(tmp_path, "a"))
    first_base = first.workdir.path.parent
    dead = _dead_worker(first_base)  # a worker of the first instance was killed
    assert dead.is_dir() and dead.parent == first_base
    with caplog.at_level(logging.WARNING, logger="sandbox.workdir"):
        second = container_jobs.make_sandbox(_config(tmp_path, "b"))
    assert "dead selector workers" not in caplog.text
    assert dead.is_dir() and first.workdir.path.is_dir()
    assert second.workdir.path.parent != first_base
    # the first instance's next worker cleans up after its own
    with caplog.at_level(logging.WARNING, logger="sandbox.workdir"):
        again = container_jobs.make_sandbox(_config(tmp_path, "a"))
    assert again.workdir.path.parent == first_base
    assert not dead.exists() and first.workdir.path.is_dir() and second.workdir.path.is_dir()
    assert "removed 1 directories of dead selector workers" in caplog.text
    for sandbox in (first, second, again):
        sandbox.workdir.close()


def test_the_instance_is_its_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    key = container_jobs.instance_key
    absolute = ServiceConfig(store=str(tmp_path / "var/store"))
    assert key(ServiceConfig(store="var/store")) == key(absolute)
    assert key(ServiceConfig(store="var/store")) != key(ServiceConfig(store="other/store"))
    assert key(ServiceConfig(store="s3://bucket-a")) != key(ServiceConfig(store="s3://bucket-b"))
    assert key(ServiceConfig(store="s3://bucket-a", s3_endpoint="http://minio:9000")) != \
        key(ServiceConfig(store="s3://bucket-a"))
    directory = workdir.instance_dir(key(ServiceConfig(store="var/store")), tmp_path)
    assert directory.parent == tmp_path and directory.name.startswith("i-")
    assert len(directory.name) == len("i-") + 16


def test_reaping_the_shared_directory_never_enters_an_instance_s(tmp_path):
    """A sandbox with no instance (the `expaudit sandbox` command) claims in the shared
    directory itself; its reaping sees `w-*` entries only, never `i-*` ones."""
    base = tmp_path / "shared"
    inside = workdir.instance_dir("local /somewhere/store", base)
    dead = _dead_worker(inside)
    assert workdir.reap(base) == []
    assert dead.is_dir()


def test_a_missing_shared_directory_is_made_private(tmp_path):
    shared = tmp_path / "run" / "expaudit-workers"
    claimed = WorkerDir.claim(workdir.instance_dir("local /x/store", shared))
    try:
        assert (shared.stat().st_mode & 0o777) == 0o700
        assert (claimed.path.parent.stat().st_mode & 0o777) == 0o700
    finally:
        claimed.close()


@pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")
def test_the_real_local_sandbox_claims_in_its_instance_s_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir, "base_dir", lambda: tmp_path / "workers")
    config = _config(tmp_path, "a")
    sandbox = container_jobs.make_sandbox(config)
    try:
        assert sandbox.workdir.path.parent == workdir.instance_dir(
            container_jobs.instance_key(config), tmp_path / "workers")
    finally:
        sandbox.close()
