"""Parquet uploads written by pyarrow and loose limits, for the tests of the upload bounds."""

from __future__ import annotations

import io

import pyarrow.parquet as pq


SOURCE = "up.parquet"


LOOSE = dict(max_rows=10**6, max_bytes=10**9, max_cell_chars=1024, max_columns=100,
             max_page_bytes=10**9)
"""Limits far above what the small files here need: each test tightens one of them."""


def parquet_bytes(table, **options) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **options)
    return buffer.getvalue()
