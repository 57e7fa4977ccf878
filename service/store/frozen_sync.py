"""The published frozen data served from the object store, so that a host needs only the
store's address and credentials (and Redis) to hold the same data as the workers.

`push_frozen` uploads every file the frozen root's `manifest.json` lists as a content-addressed
blob (`frozen/blobs/<sha256>`), then the manifest itself (`frozen/manifest.json`, written last:
a host never sees a manifest whose blobs are not all there). `sync_frozen` makes a local
directory match it: a file whose size and SHA-256 already match is kept, any other is
downloaded, checked against its hash, and moved into place (temporary file, then rename); the
manifest is written last. Files the manifest does not list are left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from expaudit.errors import DataNotFound, InvalidInput
from service.store.storage import ObjectNotFound, ObjectStore

MANIFEST = "manifest.json"
STORE_MANIFEST = "frozen/manifest.json"
BLOBS = "frozen/blobs/"


class FrozenMismatch(InvalidInput, ValueError):
    """A frozen file (local or in the store) whose content is not what the manifest says."""


class NoFrozenInStore(DataNotFound, LookupError):
    """The store holds no frozen data (`expaudit service push-frozen` was never run)."""


@dataclass(frozen=True)
class FrozenSync:
    """Files of the manifest, and how many were written (uploaded or downloaded)."""

    files: int
    written: int


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest_files(manifest: dict, where: str) -> dict[str, dict]:
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise FrozenMismatch(f"{where}: manifest.json lists no files")
    for rel, entry in files.items():
        if rel.startswith("/") or ".." in Path(rel).parts or not isinstance(entry, dict) \
                or "sha256" not in entry:
            raise FrozenMismatch(f"{where}: manifest.json entry {rel!r} is not a relative path "
                                 "with a sha256")
    return files


def push_frozen(store: ObjectStore, root: str | os.PathLike[str]) -> FrozenSync:
    """Upload the frozen root `root` (every file of its manifest, checked first) to `store`."""
    root = Path(root)
    try:
        raw = (root / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise DataNotFound(f"push-frozen: {root} has no {MANIFEST} "
                           "(`expaudit data manifest` writes it)") from None
    files = _manifest_files(json.loads(raw), str(root))
    for rel, entry in files.items():
        if _sha256_file(root / rel) != entry["sha256"]:
            raise FrozenMismatch(f"push-frozen: {root / rel} does not match its sha256 in "
                                 f"{MANIFEST}; rebuild it with `expaudit data manifest`")
    written = 0
    for entry_rel, entry in files.items():
        written += store.put_if_absent(BLOBS + entry["sha256"], (root / entry_rel).read_bytes())
    store.put_bytes(STORE_MANIFEST, raw, "application/json")
    return FrozenSync(len(files), written)


def sync_frozen(store: ObjectStore, root: str | os.PathLike[str]) -> FrozenSync:
    """Make the directory `root` hold the store's frozen data; returns what was downloaded."""
    root = Path(root)
    try:
        raw = store.get_bytes(STORE_MANIFEST)
    except ObjectNotFound:
        raise NoFrozenInStore(f"the store {store.describe()} holds no frozen data: run "
                              "`expaudit service push-frozen` on the main host") from None
    files = _manifest_files(json.loads(raw), store.describe())
    written = 0
    for rel, entry in files.items():
        target = root / rel
        if target.is_file() and target.stat().st_size == entry.get("bytes", -1) and \
                _sha256_file(target) == entry["sha256"]:
            continue
        try:
            data = store.get_bytes(BLOBS + entry["sha256"])
        except ObjectNotFound:
            raise FrozenMismatch(f"the store's frozen data lacks {rel!r} "
                                 f"({BLOBS}{entry['sha256']})") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise FrozenMismatch(f"the store's frozen file {rel!r} does not match its sha256")
        _replace(target, data)
        written += 1
    _replace(root / MANIFEST, raw)
    return FrozenSync(len(files), written)


def _replace(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
