"""Reading an uploaded Parquet file with a bound on what it decodes to, not on what it claims.

A footer can understate the decoded size a thousandfold, so it is only a first filter;
the bounds hold on the data: page sizes before anything is decompressed
(`leaderboard.scores.parquet_pages`), the schema before anything is decoded, and the
decoded size and cells `BATCH_ROWS` rows at a time, expandable text read as dictionaries
so a batch's size is known before it is expanded. The first batch past a bound stops the
read with an `InputError` naming the column (and the line, for a cell). The steps and
limits: docs/service.md ("Parquet: what is decoded, not what the footer claims").
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.scores.parquet_pages import page_sizes

BATCH_ROWS = 65_536
"""Rows decoded at a time: small enough that one batch of indices is a few
hundred KB, large enough that a million-row upload takes a few dozen batches."""

_OFFSET_BYTES = 4
"""Bytes per row of a decoded text column besides the text: its 32-bit offset."""


def read_bounded_parquet(data: bytes, source: str, *, max_rows: int, max_bytes: int,
                         max_cell_chars: int, max_columns: int, max_page_bytes: int,
                         number_columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """The upload as a table; raises `InputError` (naming `source`) for an unreadable file
    or one past a bound. A stored pandas index is dropped (it is not data)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        _check_footer(parquet.metadata, source, max_rows, max_bytes, max_columns)
        _check_pages(data, parquet.metadata, source, max_bytes, max_page_bytes)
        schema = parquet.schema_arrow
        text = _check_schema(schema, source, number_columns)
        expanding = _expanding(parquet.metadata, source)
        reader = pq.ParquetFile(io.BytesIO(data), read_dictionary=[c for c in text if c in expanding])
        batches, decoded, first_row, unused = [], 0, 0, []
        for batch in reader.iter_batches(batch_size=BATCH_ROWS, use_pandas_metadata=True):
            decoded += _expanded_bytes(batch, source, first_row, max_cell_chars, unused)
            if decoded > max_bytes:
                raise InputError(source, f"decodes to more than {max_bytes} bytes by line "
                                 f"{first_row + batch.num_rows + 1}; at most {max_bytes} are read")
            batches.append(_decoded(batch))
            first_row += batch.num_rows
        if unused:  # too long, though no row used it: refused all the same, without a line
            length, name = unused[0]
            raise InputError(source, f"is a cell of {length} bytes; at most {max_cell_chars} are read",
                             field=name)
        if batches:
            table = pa.Table.from_batches(batches).replace_schema_metadata(schema.metadata)
        else:
            table = schema.empty_table()
        frame = table.to_pandas()
    except InputError:
        raise
    except (ValueError, OSError, KeyError, TypeError, AttributeError, pa.ArrowException) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(source, f"cannot be read as parquet: {first_line}") from None
    return frame.reset_index(drop=True)


def _check_footer(meta, source: str, max_rows: int, max_bytes: int, max_columns: int) -> None:
    """Refuse what the footer already shows to be too large (it may understate, never matters
    when it overstates)."""
    if meta.num_columns > max_columns:
        raise InputError(source, f"has {meta.num_columns} columns; at most {max_columns} are read")
    if meta.num_rows > max_rows:
        raise InputError(source, f"has {meta.num_rows} rows; at most {max_rows} are read")
    unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if unpacked > max_bytes:
        raise InputError(source, f"unpacks to {unpacked} bytes; at most {max_bytes} are read")


def _check_pages(data: bytes, meta, source: str, max_bytes: int, max_page_bytes: int) -> None:
    """Refuse a page whose header asks for more than `max_page_bytes`, and pages that unpack to
    more than `max_bytes` together, before Arrow decompresses any of them."""
    total = 0
    for group_index in range(meta.num_row_groups):
        group = meta.row_group(group_index)
        if group.num_rows == 0:
            continue  # nothing is decoded from it; its empty chunks point their pages at offset 0
        for column_index in range(group.num_columns):
            chunk = group.column(column_index)
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and 0 < (chunk.dictionary_page_offset or 0) < start:
                start = chunk.dictionary_page_offset  # where Arrow starts reading, too
            for size in page_sizes(data, start, chunk.total_compressed_size):
                if size > max_page_bytes:
                    raise InputError(source, f"has a page of {size} bytes; at most {max_page_bytes} "
                                     "are read", field=chunk.path_in_schema)
                total += size
                if total > max_bytes:
                    raise InputError(source, f"unpacks to more than {max_bytes} bytes (its pages' "
                                     f"headers); at most {max_bytes} are read")


def _check_schema(schema, source: str, number_columns: tuple[str, ...]) -> list[str]:
    """The text columns (to read as dictionaries); raises for nested columns and for text
    where numbers are expected."""
    import pyarrow as pa

    text = []
    for field in schema:
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_nested(kind):
            raise InputError(source, f"is a nested column ({field.type}); only flat columns of "
                             "text or numbers are read", field=field.name)
        is_text = pa.types.is_string(kind) or pa.types.is_large_string(kind) or \
            pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
        if field.name in number_columns and not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                                 or pa.types.is_decimal(kind) or pa.types.is_null(kind)):
            raise InputError(source, f"is a {field.type} column; it must hold numbers (an integer "
                             "or floating-point column)", field=field.name)
        if is_text and not pa.types.is_dictionary(field.type):
            text.append(field.name)
    return text


def _expanded_bytes(batch, source: str, first_row: int, max_cell_chars: int, unused: list) -> int:
    """What `batch` takes once its dictionaries are expanded; raises for a cell longer than
    `max_cell_chars` (found in the dictionary, before anything is expanded), at the first row
    using it. A batch's dictionary holds the values of its whole row group: a too-long value
    none of the batch's rows uses is added to `unused` as (length, column), and a later
    batch's row using it names its line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for name, column in zip(batch.schema.names, batch.columns):
        if not pa.types.is_dictionary(column.type):
            total += column.nbytes  # plain pages decode to about their size: the page check bounds it
            if pa.types.is_string(column.type) or pa.types.is_binary(column.type) or \
                    pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type):
                _check_plain_cells(column, name, source, first_row, max_cell_chars)
            continue
        lengths = pc.binary_length(column.dictionary).fill_null(0).to_numpy(zero_copy_only=False)
        indices = column.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        too_long = np.flatnonzero(lengths > max_cell_chars)
        if too_long.size:
            rows = np.flatnonzero(np.isin(indices, too_long) & column.is_valid().to_numpy(zero_copy_only=False))
            if rows.size:
                raise InputError(source, f"is a cell of {int(lengths[indices[rows[0]]])} bytes; at most "
                                 f"{max_cell_chars} are read", line=first_row + int(rows[0]) + 2, field=name)
            unused.append((int(lengths[too_long[0]]), name))
        used = lengths[indices] if len(lengths) else np.zeros(0, dtype=np.int64)
        total += int(used.sum()) + _OFFSET_BYTES * (len(column) + 1)
    return total


def _check_plain_cells(column, name: str, source: str, first_row: int, max_cell_chars: int) -> None:
    import pyarrow.compute as pc

    lengths = pc.binary_length(column).fill_null(0).to_numpy(zero_copy_only=False)
    too_long = np.flatnonzero(lengths > max_cell_chars)
    if too_long.size:
        raise InputError(source, f"is a cell of {int(lengths[too_long[0]])} bytes; at most "
                         f"{max_cell_chars} are read", line=first_row + int(too_long[0]) + 2,
                         field=name)


_LITERAL_ENCODINGS = frozenset({"PLAIN", "RLE", "BIT_PACKED", "DELTA_LENGTH_BYTE_ARRAY"})
"""Encodings whose text values are stored whole in the page (levels are RLE or bit-packed):
such a column decodes to about what its pages unpack to, which the page check bounds."""


def _expanding(meta, source: str) -> set[str]:
    """Columns that can decode to more than their pages hold (dictionary pages in some row
    group): only these are read as dictionaries, the rest take the cheaper plain read. A
    `DELTA_BYTE_ARRAY` column (each value shares a prefix with the one before) is refused:
    Arrow cannot read it as a dictionary, and its size is unknown until it is decoded."""
    expanding = set()
    for group_index in range(meta.num_row_groups):
        group = meta.row_group(group_index)
        if group.num_rows == 0:
            continue  # nothing is decoded from it; its empty chunks point their pages at offset 0
        for column_index in range(group.num_columns):
            chunk = group.column(column_index)
            if "DELTA_BYTE_ARRAY" in chunk.encodings:
                raise InputError(source, "is DELTA_BYTE_ARRAY-encoded, whose decoded size is unknown "
                                 "until it is decoded; write the file with dictionary or plain "
                                 "encoding (the pandas and pyarrow defaults)", field=chunk.path_in_schema)
            if chunk.has_dictionary_page or not set(chunk.encodings) <= _LITERAL_ENCODINGS:
                expanding.add(chunk.path_in_schema)
    return expanding


def _decoded(batch):
    """`batch` with its dictionary columns expanded to plain ones."""
    import pyarrow as pa

    if not any(pa.types.is_dictionary(c.type) for c in batch.columns):
        return batch
    columns = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
