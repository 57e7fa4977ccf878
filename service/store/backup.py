"""Backup and restore of the object store: every key, with a SHA-256 manifest.

The store is the service's system of record (submissions, their reports, tokens, the
published site, the cells runners computed: `service.store.computed_cells`); Redis holds
only queues and caches the reconciler rebuilds from it. A backup is one tar file:
``manifest.json`` (each key's size and SHA-256) and ``objects/<key>``. A restore checks
every object against the manifest before writing anything, and refuses a store that
already holds objects unless forced.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from expaudit.errors import InvalidInput
from service.store.storage import ObjectStore

FORMAT = "expaudit-store-backup/1"
MANIFEST = "manifest.json"
OBJECTS = "objects/"


class BadBackup(InvalidInput, ValueError):
    """A backup file that is not one, or whose objects do not match its manifest."""


class TargetNotEmpty(InvalidInput, ValueError):
    """A restore into a store that already holds objects (pass force to overwrite)."""


@dataclass(frozen=True)
class BackupSummary:
    """What a backup holds or a restore wrote: the number of objects and their bytes."""

    objects: int
    bytes: int


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


def backup_store(store: ObjectStore, path: str | os.PathLike[str]) -> BackupSummary:
    """Copy every key of `store` into the tar file `path` (written beside it, then renamed:
    a backup cut short never replaces a good one)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.part")
    entries: dict[str, dict] = {}
    with tarfile.open(tmp, "w:gz") as tar:
        for key in store.list_keys(""):
            data = store.get_bytes(key)
            entries[key] = {"sha256": _sha256(data), "size": len(data)}
            _add(tar, OBJECTS + key, data)
        manifest = {"format": FORMAT, "store": store.describe(), "objects": entries}
        _add(tar, MANIFEST, json.dumps(manifest, sort_keys=True, indent=1).encode())
    os.replace(tmp, path)
    return BackupSummary(len(entries), sum(e["size"] for e in entries.values()))


def _objects(tar: tarfile.TarFile, path, manifest: dict):
    """(key, bytes) of each object of the manifest, checked against its sha256."""
    members = {m.name: m for m in tar.getmembers() if m.isfile()}
    extra = sorted(n[len(OBJECTS):] for n in members
                   if n.startswith(OBJECTS) and n[len(OBJECTS):] not in manifest["objects"])
    if extra:
        raise BadBackup(f"backup {path}: object {extra[0]!r} is not in the manifest")
    for key, entry in manifest["objects"].items():
        member = members.get(OBJECTS + key)
        if member is None:
            raise BadBackup(f"backup {path}: object {key!r} is in the manifest, not the file")
        data = tar.extractfile(member).read()
        if _sha256(data) != entry["sha256"]:
            raise BadBackup(f"backup {path}: object {key!r} does not match its sha256")
        yield key, data


def _each_object(path, write=None) -> BackupSummary:
    """Read the backup `path`, checking every object (and passing it to `write`); raises
    `BadBackup` naming the first object that is missing, extra or damaged."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            try:
                manifest = json.loads(tar.extractfile(MANIFEST).read())
            except KeyError:
                raise BadBackup(f"backup {path}: no {MANIFEST}: not an expaudit store "
                                "backup") from None
            if manifest.get("format") != FORMAT:
                raise BadBackup(f"backup {path}: format {manifest.get('format')!r} is not "
                                f"{FORMAT!r}")
            n = size = 0
            for key, data in _objects(tar, path, manifest):
                if write is not None:
                    write(key, data)
                n, size = n + 1, size + len(data)
            return BackupSummary(n, size)
    except BadBackup:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise BadBackup(f"backup {path}: unreadable ({exc})") from None


def check_backup(path: str | os.PathLike[str]) -> BackupSummary:
    """What the backup `path` holds, every object checked against its manifest."""
    return _each_object(path)


def restore_store(store: ObjectStore, path: str | os.PathLike[str],
                  force: bool = False) -> BackupSummary:
    """Write every object of the backup `path` into `store`, after checking them all (a
    damaged backup writes nothing).

    Refuses (`TargetNotEmpty`) a store that already holds objects unless `force`; with
    `force`, the backup's objects replace those of the same keys and others are kept.
    """
    check_backup(path)
    if not force:
        present = store.list_keys("")
        if present:
            raise TargetNotEmpty(f"restore: the store {store.describe()} already holds "
                                 f"{len(present)} objects (e.g. {present[0]!r}); restore into a "
                                 "fresh store, or pass --force to overwrite")
    return _each_object(path, store.put_bytes)
