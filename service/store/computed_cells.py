"""Cells computed on demand, kept in the object store: what runners on any host share.

A runner uploads each finished batch of cells as an immutable, content-addressed chunk
(`computed/{mechanism}__{query_set}/chunks/{sha256}.jsonl`, written with `put_if_absent`):
the name is the SHA-256 of the cells' canonical lines (their key and outcome fields, not the
wall time), so the same cells computed twice are one object. A store write is atomic (an
S3 PUT; a local temporary file renamed), and a reader re-hashes every object and skips one
whose content does not match its name, so a half-written or damaged chunk is never read.

One owner (an audit worker, under a Redis lock: `fold_locked`) folds the chunks into a
content-addressed table (`tables/{sha256}.jsonl.gz`) named by a manifest (`manifest.json`),
then deletes the chunks it folded. Folding is idempotent: the same cells give the same
table. A key stored twice keeps its first cell (the table's, then the chunks' in name order);
two cells of one key that disagree on their outcome are logged.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from dataclasses import dataclass

from redis.exceptions import LockError

from expaudit.journal import CELL_COLUMNS, KEY_COLUMNS
from service.store.storage import ObjectNotFound, ObjectStore, StoreError

log = logging.getLogger(__name__)

PREFIX = "computed"
"""Store folder of the computed cells, one folder per (mechanism, query set)."""
HASHED_FIELDS = tuple(c for c in CELL_COLUMNS if c != "wall_s")
"""The fields a chunk's name hashes: what a cell is and what it gave, not how long it took."""
OUTCOME_FIELDS = ("success", "state_hash", "final_hash")
"""Fields two computations of one cell must agree on (else the disagreement is logged)."""
READ_TRIES = 3
"""Reads retried when a fold deleted an object between listing and reading it."""


class Vanished(StoreError):
    """An object named by a listing or the manifest was gone when read (a fold ran meanwhile)."""


class TornBody(StoreError, ValueError):
    """A chunk or table body that does not decode: torn, or records without their key."""


def folder(mechanism: str, query_set: str) -> str:
    return f"{PREFIX}/{mechanism}__{query_set}"


def _key(record: dict) -> tuple:
    return tuple(record[k] for k in KEY_COLUMNS)


def canonical_hash(records: list[dict]) -> str:
    """SHA-256 of the records' `HASHED_FIELDS`, one sorted-key JSON line each, in key order."""
    lines = sorted(json.dumps({f: r.get(f) for f in HASHED_FIELDS}, sort_keys=True)
                   for r in records)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def encode(records: list[dict]) -> bytes:
    """JSON lines (sorted keys), in key order."""
    ordered = sorted(records, key=lambda r: json.dumps(_key(r)))
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered).encode()


def decode(data: bytes) -> list[dict]:
    """Records of a chunk or table body; raises TornBody (a ValueError) on a torn or
    malformed body."""
    text = data.decode()
    if text and not text.endswith("\n"):
        raise TornBody("torn last line")
    records = [json.loads(line) for line in text.splitlines()]
    for record in records:
        if not isinstance(record, dict) or any(k not in record for k in KEY_COLUMNS):
            raise TornBody("a record without its key fields")
    return records


@dataclass(frozen=True)
class FoldResult:
    """What one fold did: the table it names, its cells, the chunks folded."""

    table: str
    cells: int
    chunks_folded: int


class StoreCells:
    """The computed cells of a store (`benchmark_data.cells.ComputedCells`): runners `put_chunk`,
    readers `records`, one owner `fold`s.

    Chunks and tables never change once written (their name is their content's hash), so each
    is read once per process and kept while it is listed: a reader polling a setting being
    filled fetches only the chunks that landed since.
    """

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._read_cache: dict[str, list[dict]] = {}

    def __repr__(self) -> str:
        return f"StoreCells({self.store.describe()})"

    # ------------------------------------------------------------------ writing

    def put_chunk(self, mechanism: str, query_set: str, records: list[dict]) -> str | None:
        """Store a batch of cells as one content-addressed chunk; returns its key (None for no
        cells). The same cells uploaded again (another runner, a rerun) are not written twice."""
        if not records:
            return None
        key = f"{folder(mechanism, query_set)}/chunks/{canonical_hash(records)}.jsonl"
        self.store.put_if_absent(key, encode(records), "application/x-ndjson")
        return key

    # ------------------------------------------------------------------ reading

    def _manifest(self, mechanism: str, query_set: str) -> dict:
        try:
            return json.loads(self.store.get_bytes(f"{folder(mechanism, query_set)}/manifest.json"))
        except ObjectNotFound:
            return {"table": None, "chunks": []}
        except ValueError:
            log.error("computed cells %s/%s: unreadable manifest, ignored", mechanism, query_set)
            return {"table": None, "chunks": []}

    def _chunk_keys(self, mechanism: str, query_set: str, manifest: dict) -> list[str]:
        folded = set(manifest.get("chunks", ()))
        return [k for k in self.store.list_keys(f"{folder(mechanism, query_set)}/chunks/")
                if k.endswith(".jsonl") and k not in folded]

    def _verified(self, key: str, compressed: bool = False) -> list[dict]:
        """The records of one object, [] when its content does not match its name."""
        cached = self._read_cache.get(key)
        if cached is not None:
            return cached
        records = self._fetch_verified(key, compressed)
        self._read_cache[key] = records
        return records

    def _fetch_verified(self, key: str, compressed: bool) -> list[dict]:
        try:
            data = self.store.get_bytes(key)
        except ObjectNotFound:
            raise Vanished(key) from None
        try:
            records = decode(gzip.decompress(data) if compressed else data)
        except (ValueError, OSError, EOFError) as exc:
            log.warning("computed cells: %s is unreadable (%s), skipped", key, exc)
            return []
        name = key.rsplit("/", 1)[1].split(".", 1)[0]
        if canonical_hash(records) != name:
            log.warning("computed cells: %s does not match its hash, skipped", key)
            return []
        return records

    def _read(self, mechanism: str, query_set: str) -> tuple[dict, list[str], list[list[dict]]]:
        """(manifest, chunk keys, [table records, then each chunk's]), retried while a fold
        deletes what was listed."""
        attempt = 0
        while True:
            attempt += 1
            manifest = self._manifest(mechanism, query_set)
            keys = self._chunk_keys(mechanism, query_set, manifest)
            try:
                parts = [self._verified(manifest["table"], compressed=True)
                         if manifest.get("table") else []]
                parts += [self._verified(k) for k in keys]
                self._forget_all_but(folder(mechanism, query_set),
                                     {*keys, manifest.get("table")})
                return manifest, keys, parts
            except Vanished:
                if attempt == READ_TRIES:
                    raise

    def _forget_all_but(self, base: str, listed: set) -> None:
        """Drop the cached objects of `base` that are no longer listed (folded, deleted)."""
        for key in [k for k in self._read_cache if k.startswith(base + "/") and k not in listed]:
            del self._read_cache[key]

    def records(self, mechanism: str, query_set: str) -> list[dict]:
        """Every stored cell once (the first of each key)."""
        _manifest, _keys, parts = self._read(mechanism, query_set)
        return _first_of_each_key(parts, f"{mechanism}/{query_set}")

    def stored(self, mechanism: str, query_set: str) -> list[dict]:
        """Every readable record as stored, a key stored twice included (what a check that
        each cell is stored once counts)."""
        _manifest, _keys, parts = self._read(mechanism, query_set)
        return [record for records in parts for record in records]

    def signature(self, mechanism: str, query_set: str) -> tuple:
        """The table and the unfolded chunks: changes whenever `records` would."""
        manifest = self._manifest(mechanism, query_set)
        return manifest.get("table"), tuple(self._chunk_keys(mechanism, query_set, manifest))

    def __hash__(self) -> int:
        return hash(self.store.describe())

    def __eq__(self, other) -> bool:
        return isinstance(other, StoreCells) and other.store.describe() == self.store.describe()

    # ------------------------------------------------------------------ folding

    def fold(self, mechanism: str, query_set: str) -> FoldResult:
        """Fold the chunks into the table; call with the fold lock held (`fold_locked`).

        The new table is written before the manifest names it, the manifest before the folded
        chunks and the old table are deleted: a reader sees the cells at every step.
        """
        base = folder(mechanism, query_set)
        manifest, keys, parts = self._read(mechanism, query_set)
        records = _first_of_each_key(parts, f"{mechanism}/{query_set}")
        table = manifest.get("table")
        if records and (keys or not table):
            table = f"{base}/tables/{canonical_hash(records)}.jsonl.gz"
            self.store.put_if_absent(table, gzip.compress(encode(records), mtime=0),
                                     "application/gzip")
        new = {"table": table, "cells": len(records), "chunks": keys}
        if new != manifest:
            self.store.put_bytes(f"{base}/manifest.json",
                                 json.dumps(new, sort_keys=True, indent=1).encode(),
                                 "application/json")
        for key in keys:
            self.store.delete(key)
        for old in self.store.list_keys(f"{base}/tables/"):
            if old != table:
                self.store.delete(old)
        return FoldResult(table=table or "", cells=len(records), chunks_folded=len(keys))


def _first_of_each_key(parts: list[list[dict]], what: str) -> list[dict]:
    """The first record of each key over `parts` in order; logs keys whose records disagree."""
    seen: dict[tuple, dict] = {}
    for records in parts:
        for record in records:
            key = _key(record)
            first = seen.get(key)
            if first is None:
                seen[key] = record
            elif any(first.get(f) != record.get(f) for f in OUTCOME_FIELDS):
                log.warning("computed cells %s: cell %s stored twice with different outcomes; "
                            "the first is kept", what, key)
    return list(seen.values())


def fold_locked(cells: StoreCells, redis, mechanism: str, query_set: str,
                timeout_s: int = 300) -> FoldResult | None:
    """`cells.fold` under the Redis lock of (mechanism, query set); None when another process
    is folding now (its fold covers the same chunks or the next one will)."""
    lock = redis.lock(f"expaudit:lock:computed-fold:{mechanism}__{query_set}",
                      timeout=timeout_s, blocking_timeout=0)
    if not lock.acquire(blocking=False):
        return None
    try:
        return cells.fold(mechanism, query_set)
    finally:
        try:
            lock.release()
        except LockError:  # the lock expired while folding: nothing to release
            log.warning("computed-cells fold lock of %s/%s expired before release",
                        mechanism, query_set)
