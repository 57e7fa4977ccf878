"""What mutation testing of the cell store found unchecked: the writers lock of a data root
(on the root it is given, made where none exists yet, refused with its words and without
leaking a descriptor) and the cells computed by the service's runners read after the
published ones."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest

from benchmark_data import cells
from benchmark_data.cells import WRITERS_LOCK, load_cells, writers_excluded, writing_cells
from benchmark_data.paths import cells_journal, computed_journal
from expaudit.errors import InvalidInput

MECHANISM, QUERY_SET = "replay", "stack-orig"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_lock_is_the_given_roots_made_with_its_folders_and_taken_again(tmp_path):
    """A root that does not exist yet gets its cells/ folder (parents too), the lock file is
    a plain 0644 file there (the given root's, not the published one's), and a later step
    takes it again."""
    root = tmp_path / "new" / "root"
    old = os.umask(0o022)
    try:
        with writers_excluded(root, "adopt-staging"):
            info = (root / WRITERS_LOCK).stat()
            assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644
            with pytest.raises(InvalidInput):  # held: the same root's lock, not another's
                with writing_cells(root):
                    pass
            with writing_cells(tmp_path / "other"):  # another root is free
                pass
        with writers_excluded(root, "adopt-staging"), pytest.raises(InvalidInput):
            with writers_excluded(root):
                pass
        with writing_cells(root), writing_cells(root):  # shared: generation runs side by side
            pass
    finally:
        os.umask(old)


def test_a_held_lock_is_refused_naming_the_holder_and_the_root(tmp_path):
    fds = _fds()
    with writing_cells(tmp_path):
        with pytest.raises(InvalidInput) as refused:
            with writers_excluded(tmp_path, "drop-stale"):
                pass
        assert str(refused.value) == (f"drop-stale: a generate run is writing cells under "
                                      f"{tmp_path}; wait for it to end or stop it first")
    with writers_excluded(tmp_path, "adopt"):
        with pytest.raises(InvalidInput) as refused:
            with writing_cells(tmp_path):
                pass
        assert str(refused.value) == (f"generate: adopt-staging or --drop-stale is rewriting "
                                      f"the cells under {tmp_path}; wait for it to end or stop "
                                      f"it first")
    assert _fds() == fds  # the refused descriptors were closed


def test_a_file_system_without_locks_is_refused_with_its_reason(tmp_path, monkeypatch):
    def no_locks(fd, mode):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(cells.fcntl, "flock", no_locks)
    fds = _fds()
    with pytest.raises(InvalidInput) as refused:
        with writers_excluded(tmp_path, "adopt-staging"):
            pass
    assert str(refused.value) == (f"adopt-staging: {tmp_path / WRITERS_LOCK} cannot be locked "
                                  f"here (No locks available); run on a local disk")
    assert _fds() == fds


def _record(seed: int, success: int, final: str) -> dict:
    return dict(mechanism=MECHANISM, query_set=QUERY_SET, experience_id="stack-e000",
                state_id="stack-orig-s00", seed=seed, success=success, state_hash="s",
                final_hash=final, wall_s=0.25, code_version="sha256:test", packages="{}")


def _write(path, *records: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)


def test_computed_cells_are_read_after_the_published_ones(tmp_path):
    """The computed-cells directory's journal of the same (mechanism, query set) adds its
    cells; a key published already keeps the published cell; other tables' journals there
    are not read."""
    root, computed = tmp_path / "root", tmp_path / "computed"
    _write(cells_journal(MECHANISM, QUERY_SET, root), _record(0, 1, "published"))
    _write(computed_journal(MECHANISM, QUERY_SET, computed), _record(0, 0, "computed"),
           _record(1, 0, "computed"))
    _write(computed_journal(MECHANISM, "stack-fresh", computed), _record(2, 0, "other"))
    _write(computed_journal("policy", QUERY_SET, computed), _record(3, 0, "other"))
    frame = load_cells(MECHANISM, QUERY_SET, root, computed=computed)
    assert frame[["seed", "success", "final_hash"]].values.tolist() == [
        [0, 1, "published"], [1, 0, "computed"]]
    assert load_cells(MECHANISM, QUERY_SET, root)["final_hash"].tolist() == ["published"]
