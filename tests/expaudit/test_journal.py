"""The journal of a run in progress (`expaudit.journal`): the executors write the lines the
data side folds into its tables, and a torn last line (a run killed mid-write) is never read
as a cell."""

from __future__ import annotations

import json

import pytest

from benchmark_data.cells import load_cells
from benchmark_data.paths import cells_journal
from expaudit.journal import CELL_COLUMNS, KEY_COLUMNS, append_record, journal_keys, read_journal
from simulator.executor import Cell, CellResult, journaled


def _result(seed: int, success: int = 1) -> CellResult:
    cell = Cell("replay", "stack-base", "stack-e000", "base-stack-e000", seed)
    return CellResult(cell, success, "s", f"f{seed}", 0.123456, "sha256:test", "{}")


def test_a_record_has_the_cell_columns_and_the_key_leads():
    record = _result(0).to_record()
    assert tuple(record) == CELL_COLUMNS
    assert CELL_COLUMNS[:len(KEY_COLUMNS)] == KEY_COLUMNS


def test_the_executors_lines_are_read_back_by_the_data_side(tmp_path):
    """What an executor journals (`simulator.executor.journaled`) is what the cells table
    reads (`benchmark_data.cells.load_cells`) and what a rerun skips."""
    path = cells_journal("replay", "stack-base", tmp_path)
    results = [_result(s, s % 2) for s in range(3)]
    assert list(journaled(results, lambda cell: path)) == results
    records = [r.to_record() for r in results]
    assert path.read_text().splitlines() == [json.dumps(r, sort_keys=True) for r in records]
    assert read_journal(path) == records
    assert journal_keys(path) == {r.cell.key for r in results}
    frame = load_cells("replay", "stack-base", tmp_path)
    assert list(frame.columns) == list(CELL_COLUMNS)
    assert list(frame["seed"]) == [0, 1, 2] and list(frame["success"]) == [0, 1, 0]


def test_a_missing_journal_reads_as_no_records(tmp_path):
    path = tmp_path / "absent.journal.jsonl"
    assert read_journal(path) == []
    assert journal_keys(path) == set()


def test_a_torn_last_line_is_ignored(tmp_path):
    path = tmp_path / "j.jsonl"
    first, second = _result(0).to_record(), _result(1).to_record()
    append_record(path, first)
    with path.open("a") as fh:
        fh.write(json.dumps(second)[:20])  # killed mid-write
    assert read_journal(path) == [first]


def test_appending_cuts_a_torn_line_first(tmp_path):
    path = tmp_path / "j.jsonl"
    first, second = _result(0).to_record(), _result(1).to_record()
    append_record(path, first)
    with path.open("a") as fh:
        fh.write(json.dumps(second)[:20])  # killed mid-write
    append_record(path, second)
    assert read_journal(path) == [first, second]
    assert path.read_text().count("\n") == 2


def test_a_broken_complete_line_is_an_error_not_a_skipped_cell(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text("{not json}\n")
    with pytest.raises(json.JSONDecodeError):
        read_journal(path)
