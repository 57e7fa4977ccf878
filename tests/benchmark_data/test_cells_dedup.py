"""The cells store after a crash in `consolidate`: one row per cell, and the table's row wins.

`consolidate` replaces the Parquet table (the journal folded in) and then
removes the journal. A run killed between the two leaves every journal cell
twice on disk, in the table and in the journal; the loaders must count each
cell once, or per-experience figures (own-base success, completeness,
the stored keys a rerun skips) are computed over duplicates.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import benchmark_data.cells as cells_module
from benchmark_data.cells import CELL_COLUMNS, KEY_COLUMNS, consolidate, load_cells
from benchmark_data.paths import cells_journal, cells_table

MECHANISM, QUERY_SET = "replay", "stack-base"


class SimulatedCrash(BaseException):
    """The process dies here (a BaseException, as KeyboardInterrupt or SystemExit is)."""


def _record(experience_id: str, seed: int, success: int, final: str = "f") -> dict:
    values = dict(mechanism=MECHANISM, query_set=QUERY_SET, experience_id=experience_id,
                  state_id=f"base-{experience_id}", seed=seed, success=success,
                  state_hash=f"s-{experience_id}", final_hash=f"{final}-{experience_id}-{seed}",
                  wall_s=0.1, code_version="sha256:test", packages="{}")
    assert tuple(values) == CELL_COLUMNS
    return values


def _append_journal(root, records) -> None:
    journal = cells_journal(MECHANISM, QUERY_SET, root)
    journal.parent.mkdir(parents=True, exist_ok=True)
    with journal.open("a") as fh:
        fh.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)


def _crash_after_the_table_replace(root, monkeypatch) -> None:
    """Run `consolidate`, killed right after its table replace (the journal stays)."""
    replace = os.replace

    def replace_then_die(src, dst):
        replace(src, dst)
        raise SimulatedCrash

    with monkeypatch.context() as patch:
        patch.setattr(cells_module.os, "replace", replace_then_die)
        with pytest.raises(SimulatedCrash):
            consolidate(MECHANISM, QUERY_SET, root)


def test_a_crash_between_table_replace_and_journal_unlink_counts_each_cell_once(tmp_path, monkeypatch):
    from benchmark_data.frozen import own_base_success
    from service.runner.rollout_runner import stored_keys

    _append_journal(tmp_path, [_record("stack-e000", 0, 0), _record("stack-e000", 1, 0)])
    assert consolidate(MECHANISM, QUERY_SET, tmp_path) == 2
    journal_cells = [_record("stack-e000", 2, 1), _record("stack-e001", 0, 1), _record("stack-e001", 1, 0)]
    _append_journal(tmp_path, journal_cells)
    _crash_after_the_table_replace(tmp_path, monkeypatch)

    table = pd.read_parquet(cells_table(MECHANISM, QUERY_SET, tmp_path))
    assert len(table) == 5 and cells_journal(MECHANISM, QUERY_SET, tmp_path).exists()  # the crash state
    frame = load_cells(MECHANISM, QUERY_SET, tmp_path)
    assert len(frame) == 5 and not frame.duplicated(list(KEY_COLUMNS)).any()
    assert own_base_success("stack-stream", tmp_path) == {"stack-e000": pytest.approx(1 / 3),
                                                          "stack-e001": 0.5}
    assert len(stored_keys(tmp_path, MECHANISM, QUERY_SET)) == 5

    assert consolidate(MECHANISM, QUERY_SET, tmp_path) == 5  # the next run folds the journal
    assert not cells_journal(MECHANISM, QUERY_SET, tmp_path).exists()
    assert len(pd.read_parquet(cells_table(MECHANISM, QUERY_SET, tmp_path))) == 5


def test_the_tables_row_wins_over_a_journal_row_of_the_same_cell(tmp_path):
    _append_journal(tmp_path, [_record("stack-e000", 0, 1, final="table"), _record("stack-e000", 1, 0)])
    consolidate(MECHANISM, QUERY_SET, tmp_path)
    _append_journal(tmp_path, [_record("stack-e000", 0, 0, final="journal"), _record("stack-e000", 2, 1)])

    frame = load_cells(MECHANISM, QUERY_SET, tmp_path).set_index("seed")
    assert frame.loc[0, ["success", "final_hash"]].tolist() == [1, "table-stack-e000-0"]
    assert sorted(frame.index) == [0, 1, 2]
    assert consolidate(MECHANISM, QUERY_SET, tmp_path) == 3
    stored = pd.read_parquet(cells_table(MECHANISM, QUERY_SET, tmp_path)).set_index("seed")
    assert stored.loc[0, ["success", "final_hash"]].tolist() == [1, "table-stack-e000-0"]
