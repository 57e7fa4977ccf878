"""The journal of a run in progress: the data side reads and appends the lines the
executors write, and a torn last line (a run killed mid-write) is never read as a cell."""

from __future__ import annotations

import json

import pytest

from benchmark_data.journal import (
    CELL_COLUMNS,
    KEY_COLUMNS,
    append_record,
    read_journal,
    read_journal_frame,
)
from simulator.executor import Cell, CellResult
from simulator.executor import read_journal as executor_read_journal


def _result(seed: int, success: int = 1) -> CellResult:
    cell = Cell("replay", "stack-base", "stack-e000", "base-stack-e000", seed)
    return CellResult(cell, success, "s", f"f{seed}", 0.123456, "sha256:test", "{}")


def test_a_record_has_the_cell_columns_and_the_key_leads():
    record = _result(0).to_record()
    assert tuple(record) == CELL_COLUMNS
    assert CELL_COLUMNS[:len(KEY_COLUMNS)] == KEY_COLUMNS


def test_appended_lines_are_the_executor_format_and_both_readers_agree(tmp_path):
    path = tmp_path / "cells" / "replay__stack-base.journal.jsonl"
    records = [_result(s, s % 2).to_record() for s in range(3)]
    for record in records:
        append_record(path, record)
    lines = path.read_text().splitlines()
    assert lines == [json.dumps(r, sort_keys=True) for r in records]
    assert read_journal(path) == records == executor_read_journal(path)
    frame = read_journal_frame(path)
    assert list(frame.columns) == list(CELL_COLUMNS)
    assert list(frame["seed"]) == [0, 1, 2] and list(frame["success"]) == [0, 1, 0]


def test_a_missing_journal_reads_as_no_records(tmp_path):
    path = tmp_path / "absent.journal.jsonl"
    assert read_journal(path) == []
    assert len(read_journal_frame(path)) == 0


def test_a_torn_last_line_is_ignored_by_both_readers(tmp_path):
    path = tmp_path / "j.jsonl"
    first, second = _result(0).to_record(), _result(1).to_record()
    append_record(path, first)
    with path.open("a") as fh:
        fh.write(json.dumps(second)[:20])  # killed mid-write
    assert read_journal(path) == [first] == executor_read_journal(path)


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
