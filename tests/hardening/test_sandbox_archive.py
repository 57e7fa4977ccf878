"""Issue 30, item 3: a path conflict in a selector archive (`x` and `x/y`) is refused at
upload, naming both entries; any error while unpacking a stored archive is the submitter's
and names no host path.

Seen failing on the old code: `check_archive` accepted the archive, and the audit job of
a stored one failed unpacking with FileExistsError (retried, then `infrastructure`), its
reason naming `.../runs/run-.../selector/x` on the worker's host.
"""

from __future__ import annotations

import errno
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from service.queues import jobs
from service.errors import ValidationFailed
from service.submissions.records import Fault, Manifest, State, SubmissionRepo, new_submission_id, utc_now
from service.selectors.archive import check_archive, unpack_archive


SELECTOR = b"print('hello')\n"


def _archive(*entries: tuple[str, bytes | None]) -> bytes:
    """A .tar.gz of `entries` in order: (name, bytes) for a file, (name, None) for a folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


CONFLICTS = [
    pytest.param([("selector.py", SELECTOR), ("x", b"file"), ("x/y", b"below it")],
                 "x", "x/y", "x", id="file-then-below"),
    pytest.param([("selector.py", SELECTOR), ("x/y", b"below it"), ("x", b"file")],
                 "x/y", "x", "x", id="below-then-file"),
    pytest.param([("selector.py", SELECTOR), ("x", None), ("x", b"file")],
                 "x", "x", "x", id="folder-then-file"),
    pytest.param([("selector.py", SELECTOR), ("x", b"file"), ("x/", None)],
                 "x", "x", "x", id="file-then-folder"),  # tarfile drops the trailing /
    pytest.param([("sel/selector.py", SELECTOR), ("sel/lib", b"file"), ("sel/lib/a/b.py", b"")],
                 "sel/lib", "sel/lib/a/b.py", "lib", id="under-a-top-folder"),
]


@pytest.mark.parametrize("entries, first, second, path", CONFLICTS)
def test_a_path_conflict_is_refused_at_upload_naming_both_entries(entries, first, second, path):
    with pytest.raises(ValidationFailed) as caught:
        check_archive(_archive(*entries), "sel.tar.gz")
    if first == second:
        assert caught.value.message == (f"selector archive 'sel.tar.gz': entry '{first}' is "
                                        "both a file and a folder")
    else:
        assert caught.value.message == (f"selector archive 'sel.tar.gz': entries '{first}' and "
                                        f"'{second}' conflict: '{path}' would be both a file and "
                                        "a folder")
    assert caught.value.status == 422 and caught.value.field == "selector"


def test_the_upload_of_a_conflicting_archive_is_a_422_naming_both_entries():
    """The web side of a container submission (`check_selector`) checks the archive."""
    from service.selectors.submissions import check_selector

    class _Catalog:
        def get_setting(self, setting_id, field=None):
            return setting_id

        def supports_selectors(self, setting_id):
            return True

    data = _archive(("selector.py", SELECTOR), ("x", b"file"), ("x/y", b"below it"))
    with pytest.raises(ValidationFailed) as caught:
        check_selector(data, "sel.tar.gz", {"setting": "toy-k4"}, _Catalog(), "local")
    assert caught.value.status == 422
    assert "entries 'x' and 'x/y' conflict" in caught.value.message


def test_repeated_entries_that_agree_are_still_accepted():
    """A folder listed twice, or a file updated by a later entry (tar -r), is no conflict."""
    data = _archive(("selector.py", b"old"), ("lib", None), ("lib/", None), ("lib/a.py", b""),
                    ("selector.py", SELECTOR))
    assert [str(e.path) for e in check_archive(data, "ok.tar.gz").entries] == [
        "selector.py", "lib", "lib", "lib/a.py", "selector.py"]


def test_a_name_longer_than_a_file_system_allows_is_refused_at_upload():
    with pytest.raises(ValidationFailed, match=r"entry 'a{255}b' has a name part longer than "
                                               r"255 bytes"):
        check_archive(_archive(("selector.py", SELECTOR), ("a" * 255 + "b", b"")), "long.tar.gz")


def test_an_unpacking_error_names_the_entry_not_the_host_directory(tmp_path):
    """Any OSError while unpacking is the archive's (`ArchiveUnpackFailed`), naming the
    entry only; here the target already holds a folder where the archive has a file."""
    from service.selectors.archive import ArchiveUnpackFailed

    target = tmp_path / "deep" / "host" / "dir"
    (target / "data").mkdir(parents=True)
    with pytest.raises(ArchiveUnpackFailed) as caught:
        unpack_archive(_archive(("selector.py", SELECTOR), ("data", b"x")), "s.tar.gz", target)
    assert str(caught.value) == ("selector archive 's.tar.gz': entry 'data' cannot be "
                                 "unpacked: Is a directory")
    assert str(tmp_path) not in str(caught.value)


def test_a_full_disk_while_unpacking_is_the_host_s_and_names_no_path(tmp_path, monkeypatch):
    from service.selectors.archive import HostUnpackFailed

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(HostUnpackFailed) as caught:
        unpack_archive(_archive(("selector.py", SELECTOR)), "s.tar.gz", tmp_path / "sel")
    assert str(caught.value) == ("selector archive 's.tar.gz': the host could not unpack entry "
                                 "'selector.py': No space left on device")
    assert not isinstance(caught.value, jobs.SUBMITTER_ERRORS)  # retried, never charged


class _SelectorCatalog:
    """The toy catalog, with the demo /input for its selectors (so that on the old code,
    which built /input first, the run reached the unpacking)."""

    def __init__(self, catalog) -> None:
        self._catalog = catalog

    def __getattr__(self, name):
        return getattr(self._catalog, name)

    def selector_input(self, setting_id: str, directory: Path):
        from sandbox.demo import demo_input

        return demo_input(directory)


class _TempSandbox:
    """A sandbox that is never reached: the archive fails before the run (no workdir:
    `run_tree` takes a temporary directory)."""

    workdir = None

    def run(self, spec):  # pragma: no cover - the test fails if a run starts
        raise AssertionError("the selector must not run")


def _stored_container_submission(store, data: bytes) -> str:
    """A container submission whose archive was stored before the upload check refused
    path conflicts."""
    sha = hashlib.sha256(data).hexdigest()
    store.put_if_absent(f"inputs/sha256/{sha}", data)
    sid = new_submission_id()
    SubmissionRepo(store).create(Manifest(
        submission_id=sid, owner="tok-test", owner_name="test", name="selector",
        settings=("toy-k4",), input_key=f"inputs/sha256/{sha}", input_sha256=sha,
        input_format="selector-tar.gz", filename="conflict.tar.gz", selection_only=False,
        created_at=utc_now(), kind="container", selector_backend="local"))
    return sid


def test_a_stored_conflicting_archive_fails_as_the_submitter_s_without_a_host_path(
        store, redis_conn, catalog, tmp_path):
    sid = _stored_container_submission(
        store, _archive(("selector.py", SELECTOR), ("x", b"file"), ("x/y", b"below it")))
    jobs.enqueue_audit(redis_conn, sid, container=True)
    jobs.install_context(jobs.JobContext(store=store, redis=redis_conn,
                                         catalog=_SelectorCatalog(catalog), options=None,
                                         sandbox=_TempSandbox()))
    try:
        from rq import SimpleWorker

        from service.queues.worker import queues

        SimpleWorker(queues(redis_conn, ("selectors",)), connection=redis_conn).work(
            burst=True, logging_level="WARNING")
    finally:
        jobs.install_context(None)
    status = SubmissionRepo(store).status(sid)
    assert status.state is State.FAILED and status.fault is Fault.SUBMITTER, status
    assert status.reason == ("selector archive 'conflict.tar.gz': entries 'x' and 'x/y' "
                             "conflict: 'x' would be both a file and a folder")
    assert "/" not in status.reason.replace("x/y", "")  # no host directory
    assert status.attempts == 1
