"""`service.store.backup`: every key with its sha256, a damaged backup refused before anything
is written, a non-empty target refused unless forced."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from service.store.backup import (BadBackup, TargetNotEmpty, backup_store, check_backup,
                                  restore_store)
from service.store.storage import LocalStore

OBJECTS = {"submissions/s1/manifest.json": b'{"id": "s1"}', "tokens/ab.json": b"{}",
           "computed/replay__q/chunks/00.jsonl": b'{"seed": 0}\n', "site/index.html": b"<p>"}


def _filled(path) -> LocalStore:
    store = LocalStore(path)
    for key, data in OBJECTS.items():
        store.put_bytes(key, data)
    return store


def test_backup_and_restore_copy_every_key(tmp_path):
    source = _filled(tmp_path / "a")
    summary = backup_store(source, tmp_path / "b.tar.gz")
    assert (summary.objects, summary.bytes) == (4, sum(map(len, OBJECTS.values())))
    target = LocalStore(tmp_path / "c")
    assert restore_store(target, tmp_path / "b.tar.gz").objects == 4
    assert {k: target.get_bytes(k) for k in target.list_keys("")} == OBJECTS


def test_a_non_empty_target_is_refused_unless_forced(tmp_path):
    backup_store(_filled(tmp_path / "a"), tmp_path / "b.tar.gz")
    target = LocalStore(tmp_path / "c")
    target.put_bytes("tokens/ab.json", b"newer")
    with pytest.raises(TargetNotEmpty, match="tokens/ab.json"):
        restore_store(target, tmp_path / "b.tar.gz")
    assert target.get_bytes("tokens/ab.json") == b"newer"
    restore_store(target, tmp_path / "b.tar.gz", force=True)
    assert target.get_bytes("tokens/ab.json") == b"{}"


def _rewrite(path, change) -> None:
    """Rewrite the backup tar with `change(name, data)` applied to each member."""
    with tarfile.open(path, "r:gz") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member, data in members:
            data = change(member.name, data)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    path.write_bytes(gzip.compress(out.getvalue()))


def test_a_damaged_object_is_named_and_nothing_is_written(tmp_path):
    backup = tmp_path / "b.tar.gz"
    backup_store(_filled(tmp_path / "a"), backup)
    _rewrite(backup, lambda name, data: b"forged" if name == "objects/tokens/ab.json" else data)
    target = LocalStore(tmp_path / "c")
    with pytest.raises(BadBackup, match="'tokens/ab.json' does not match its sha256"):
        restore_store(target, backup)
    assert target.list_keys("") == []


def test_a_cut_short_or_foreign_file_is_refused(tmp_path):
    backup = tmp_path / "b.tar.gz"
    backup_store(_filled(tmp_path / "a"), backup)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(backup.read_bytes()[: backup.stat().st_size // 2])
    with pytest.raises(BadBackup, match="unreadable"):
        check_backup(cut)
    foreign = tmp_path / "foreign.tar.gz"
    with tarfile.open(foreign, "w:gz") as tar:
        tar.add(tmp_path / "a" / "tokens" / "ab.json", arcname="ab.json")
    with pytest.raises(BadBackup, match="not an expaudit store backup"):
        check_backup(foreign)
