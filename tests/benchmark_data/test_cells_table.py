"""The consolidated cells table's format: the frozen README's columns, in order, and their types.

Other readers than pandas (pyarrow, DuckDB, a user's script) read these files,
so what is on disk matters, not only what `load_cells` gives back.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from benchmark_data.cells import CELL_COLUMNS, consolidate, load_cells
from benchmark_data.paths import cells_journal, cells_table

MECHANISM, QUERY_SET = "replay", "stack-orig"


def _journal(root, *records: dict) -> None:
    path = cells_journal(MECHANISM, QUERY_SET, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:  # as the executor writes them: keys sorted, an extra key ignored
        fh.writelines(json.dumps({**r, "extra": 1}, sort_keys=True) + "\n" for r in records)


def _record(seed: int, success: int) -> dict:
    return dict(mechanism=MECHANISM, query_set=QUERY_SET, experience_id="stack-e000",
                state_id="stack-orig-s00", seed=seed, success=success, state_hash="s",
                final_hash=f"f{seed}", wall_s=0.25, code_version="sha256:test", packages="{}")


def test_journal_cells_load_with_the_cell_columns_in_order(tmp_path):
    _journal(tmp_path, _record(1, 1), _record(0, 0))
    frame = load_cells(MECHANISM, QUERY_SET, tmp_path)
    assert list(frame.columns) == list(CELL_COLUMNS)
    assert frame["seed"].tolist() == [1, 0]


def test_the_table_holds_the_cell_columns_typed_sorted_and_zstd_compressed(tmp_path):
    _journal(tmp_path, _record(1, 1), _record(0, 0))
    assert consolidate(MECHANISM, QUERY_SET, tmp_path) == 2
    path = cells_table(MECHANISM, QUERY_SET, tmp_path)
    schema = pq.read_schema(path)
    assert schema.names == list(CELL_COLUMNS)  # no index column, no stray key
    assert (str(schema.field("seed").type), str(schema.field("success").type)) == ("int64", "int8")
    metadata = pq.ParquetFile(path).metadata.row_group(0)
    assert {metadata.column(i).compression for i in range(metadata.num_columns)} == {"ZSTD"}
    assert pq.read_table(path).column("seed").to_pylist() == [0, 1]  # sorted by key
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file, no journal
