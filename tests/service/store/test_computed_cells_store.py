"""Computed cells in the object store (`service.store.computed_cells`): content-addressed
chunks, damaged objects never read, an idempotent fold, a cell computed twice stored once; on
a local store and on the real S3 server."""

from __future__ import annotations

import logging

import pytest
import redis

from benchmark_data.cells import load_cells
from expaudit.journal import append_record
from benchmark_data.paths import computed_journal
from service.store.computed_cells import StoreCells, canonical_hash, encode, fold_locked, folder
from service.store.storage import LocalStore
from tests.support.stores import local_or_s3_store

MECH, QS = "replay", "stack-hidden"


def _record(exp: str, state: str, seed: int, success: int = 1, wall_s: float = 1.5) -> dict:
    return {"mechanism": MECH, "query_set": QS, "experience_id": exp, "state_id": state,
            "seed": seed, "success": success, "state_hash": f"sh-{state}",
            "final_hash": f"fh-{exp}-{state}-{seed}-{success}", "wall_s": wall_s,
            "code_version": "abc123", "packages": {"mujoco": "3.1.6"}}


@pytest.fixture(params=["local", "s3"])
def any_store(request, tmp_path):
    return local_or_s3_store(request, tmp_path, "cells-", 8)


def _chunks(store) -> list[str]:
    return store.list_keys(f"{folder(MECH, QS)}/chunks/")


def test_the_same_cells_uploaded_twice_are_one_object_whatever_their_wall_time(any_store):
    cells = StoreCells(any_store)
    first = cells.put_chunk(MECH, QS, [_record("e0", "s0", 0), _record("e0", "s0", 1)])
    again = cells.put_chunk(MECH, QS, [_record("e0", "s0", 1, wall_s=9.0),
                                       _record("e0", "s0", 0, wall_s=3.0)])
    assert first == again and _chunks(any_store) == [first]
    assert len(cells.records(MECH, QS)) == 2
    other = cells.put_chunk(MECH, QS, [_record("e0", "s0", 0, success=0)])  # another outcome
    assert other != first and len(_chunks(any_store)) == 2


def test_a_torn_or_mismatching_chunk_is_never_read(any_store, caplog):
    cells = StoreCells(any_store)
    good = cells.put_chunk(MECH, QS, [_record("e0", "s0", 0)])
    base = f"{folder(MECH, QS)}/chunks"
    torn = [_record("e1", "s0", 0), _record("e1", "s0", 1)]
    any_store.put_bytes(f"{base}/{canonical_hash(torn)}.jsonl", encode(torn)[:-20])  # cut short
    claimed, held = [_record("e2", "s0", 0, success=0)], [_record("e2", "s0", 0, success=1)]
    any_store.put_bytes(f"{base}/{canonical_hash(claimed)}.jsonl", encode(held))  # wrong content
    any_store.put_bytes(f"{base}/{'0' * 64}.jsonl", b"\x00\x01 not json\n")
    with caplog.at_level(logging.WARNING, logger="service.store.computed_cells"):
        records = cells.records(MECH, QS)
    assert [(r["experience_id"], r["seed"]) for r in records] == [("e0", 0)]
    assert len(_chunks(any_store)) == 4 and good in _chunks(any_store)
    assert sum("skipped" in m for m in caplog.messages) == 3


def test_folding_twice_gives_the_same_table_and_reads_the_same_cells(any_store, redis_conn):
    cells = StoreCells(any_store)
    for seed in range(3):
        cells.put_chunk(MECH, QS, [_record("e0", "s0", seed), _record("e1", "s0", seed)])
    before = sorted(cells.records(MECH, QS), key=lambda r: (r["experience_id"], r["seed"]))
    first = fold_locked(cells, redis_conn, MECH, QS)
    assert first.chunks_folded == 3 and first.cells == 6 and _chunks(any_store) == []
    after = sorted(cells.records(MECH, QS), key=lambda r: (r["experience_id"], r["seed"]))
    assert after == before
    second = fold_locked(cells, redis_conn, MECH, QS)
    assert (second.table, second.cells, second.chunks_folded) == (first.table, 6, 0)
    assert any_store.list_keys(f"{folder(MECH, QS)}/tables/") == [first.table]

    cells.put_chunk(MECH, QS, [_record("e2", "s0", 0)])
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 0, wall_s=7.0)])  # already in the table
    third = fold_locked(cells, redis_conn, MECH, QS)
    assert third.cells == 7 and third.table != first.table
    assert any_store.list_keys(f"{folder(MECH, QS)}/tables/") == [third.table]
    assert len(cells.records(MECH, QS)) == 7


def test_a_cell_computed_twice_is_stored_once_and_a_disagreement_is_logged(any_store, redis_conn,
                                                                          caplog):
    cells = StoreCells(any_store)
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 0), _record("e0", "s0", 1)])
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 1, wall_s=4.0), _record("e0", "s0", 2)])
    with caplog.at_level(logging.WARNING, logger="service.store.computed_cells"):
        assert len(cells.records(MECH, QS)) == 3
    assert not caplog.messages  # same outcome twice: no disagreement
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 2, success=0)])
    with caplog.at_level(logging.WARNING, logger="service.store.computed_cells"):
        folded = fold_locked(cells, redis_conn, MECH, QS)
    assert folded.cells == 3
    assert any("different outcomes" in m and "'e0', 's0', 2" in m for m in caplog.messages)


def test_one_fold_at_a_time(redis_conn, tmp_path):
    cells = StoreCells(LocalStore(tmp_path / "store"))
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 0)])
    held = redis.Redis(connection_pool=redis_conn.connection_pool).lock(
        f"expaudit:lock:computed-fold:{MECH}__{QS}", timeout=30)
    assert held.acquire(blocking=False)
    try:
        assert fold_locked(cells, redis_conn, MECH, QS) is None
        assert len(_chunks(cells.store)) == 1  # nothing folded meanwhile
    finally:
        held.release()
    assert fold_locked(cells, redis_conn, MECH, QS).chunks_folded == 1


def test_load_cells_reads_the_store_beside_a_legacy_directory_and_the_signature_moves(tmp_path):
    cells = StoreCells(LocalStore(tmp_path / "store"))
    legacy = tmp_path / "cells"
    append_record(computed_journal(MECH, QS, legacy), _record("e0", "s0", 0, success=0))
    empty = cells.signature(MECH, QS)
    cells.put_chunk(MECH, QS, [_record("e0", "s0", 0, success=1), _record("e1", "s0", 0)])
    assert cells.signature(MECH, QS) != empty
    frame = load_cells(MECH, QS, tmp_path / "no-frozen", (legacy, cells))
    got = {(r.experience_id, int(r.success)) for r in frame.itertuples()}
    assert got == {("e0", 0), ("e1", 1)}  # the legacy cell came first and is kept


class CountingStore(LocalStore):
    """A local store that counts the objects it reads."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def get_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get_bytes(key)


def test_a_reader_fetches_each_chunk_once_and_forgets_folded_ones(tmp_path, redis_conn):
    store = CountingStore(tmp_path / "store")
    reader, writer = StoreCells(store), StoreCells(LocalStore(tmp_path / "store"))
    first = writer.put_chunk(MECH, QS, [_record("e0", "s0", 0)])
    assert len(reader.records(MECH, QS)) == 1
    second = writer.put_chunk(MECH, QS, [_record("e0", "s0", 1)])
    store.reads.clear()
    assert len(reader.records(MECH, QS)) == 2
    assert [k for k in store.reads if "/chunks/" in k] == [second]  # the new chunk only
    folded = fold_locked(writer, redis_conn, MECH, QS)
    assert len(reader.records(MECH, QS)) == 2
    assert set(reader._read_cache) == {folded.table}  # the folded chunks are forgotten
    assert first not in reader._read_cache
