"""What mutation testing of the uploads showed untested: each bound at its limit and what its
refusals name.

A JSON upload's `{"rows": [...]}` form and the source, line, field and value
of a document without rows, a row that is not an object, an unknown key or a
document too deeply nested, and a setting's lines mapped back to the file's; in a Parquet
upload, every limit of the footer, the page headers, the schema and the
decoded size with a file exactly at it (read) and one byte or row past it
(refused, naming the column and line), sizes summed over pages, columns,
row groups and batches; the decoded-size limit of a large catalog; chunked
bodies whatever the letter case of their header; the CSV row pre-count; a
full file's size; the `setting` field; an unknown setting id's line.
"""

from __future__ import annotations

import decimal
import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import leaderboard.scores.limits
from leaderboard.errors import InputError
from leaderboard.scores.parquet import (BATCH_ROWS, _check_footer, _check_pages, _check_schema,
                                        _expanded_bytes, read_bounded_parquet)
from service.catalog.catalog import StaticCatalog
from service.web.request_body import BoundedBody
from leaderboard.scores.json_rows import JSON_KEYS, read_json_rows
from leaderboard.scores.limits import (MULTIPART_BYTES, UploadLimits, count_rows_upper_bound,
                                       full_file_needs)
from leaderboard.scores.upload import (FieldError, _shift_line, read_frame, requested_settings,
                                       split_by_setting, validate_upload)
from tests.support.servers import scores_rows, synthetic_setting
from tests.support.uploads import LOOSE, SOURCE, parquet_bytes

ROWS = [{"setting_id": "toy-k4", "scene_id": "s0", "experience_id": "e1", "score": 0.5},
        {"setting_id": "toy-k4", "scene_id": "s1", "experience_id": "e2"}]


def test_a_json_object_with_rows_reads_like_the_list_itself():
    as_object = read_json_rows(json.dumps({"rows": ROWS}).encode(), "scores.json")
    as_list = read_json_rows(json.dumps(ROWS).encode(), "scores.json")
    pd.testing.assert_frame_equal(as_object, as_list)
    assert list(as_object.columns) == ["setting_id", "scene_id", "experience_id", "score"]
    assert as_object["score"].tolist() == [0.5, None]


def test_a_row_that_is_not_an_object_is_named_by_line_field_and_value():
    with pytest.raises(InputError) as refused:
        read_json_rows(json.dumps([ROWS[0], [1, 2]]).encode(), "scores.json")
    error = refused.value
    assert (error.source, error.message, error.line, error.field, error.value) == (
        "scores.json", "is not an object", 3, "rows", "[1, 2]")


def test_a_document_nested_too_deeply_is_refused_as_invalid_json():
    with pytest.raises(InputError) as refused:
        read_json_rows(b"[" * 100_000 + b"]" * 100_000, "scores.json")
    assert refused.value.source == "scores.json"
    assert refused.value.message == "is not valid JSON: nested too deeply"


# --- The Parquet bounds, each at its limit -----------------------------------------------


def _read(data: bytes, **limits) -> pd.DataFrame:
    return read_bounded_parquet(data, SOURCE, **{**LOOSE, **limits})


def _refusal(data: bytes, **limits) -> InputError:
    with pytest.raises(InputError) as refused:
        _read(data, **limits)
    return refused.value


def _numbers(rows: int = 10, **options) -> bytes:
    """Two required number columns, uncompressed and plain: every data page unpacks to
    exactly 8 bytes per row (no levels, no dictionary); pages of 4 rows, row groups of 5."""
    schema = pa.schema([pa.field("score", pa.float64(), nullable=False),
                        pa.field("n", pa.int64(), nullable=False)])
    table = pa.table({"score": np.arange(float(rows)), "n": np.arange(rows)}, schema=schema)
    return parquet_bytes(table, use_dictionary=False, compression="none", max_rows_per_page=4,
                    row_group_size=5, **options)


def _dictionary_column(values: list, name: str = "scene_id") -> bytes:
    return parquet_bytes(pa.table({name: pa.array(values, pa.string())}), store_schema=False)


def test_a_file_with_exactly_the_column_limit_is_read_and_one_more_is_refused():
    data = _numbers()
    assert list(_read(data, max_columns=2).columns) == ["score", "n"]
    error = _refusal(data, max_columns=1)
    assert (error.source, error.message) == (SOURCE, "has 2 columns; at most 1 are read")


def test_a_file_with_exactly_the_row_limit_is_read_and_one_more_is_refused():
    data = _numbers()
    assert len(_read(data, max_rows=10)) == 10
    error = _refusal(data, max_rows=9)
    assert (error.source, error.message) == (SOURCE, "has 10 rows; at most 9 are read")


def test_the_footer_size_is_summed_over_row_groups_and_bounded_at_its_limit():
    data = _numbers()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    sizes = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    assert len(sizes) == 2
    unpacked = sum(sizes)
    _check_footer(meta, SOURCE, 10, unpacked, 2)  # exactly at the limit: no refusal
    with pytest.raises(InputError) as refused:
        _check_footer(meta, SOURCE, 10, unpacked - 1, 2)
    assert (refused.value.source, refused.value.message) == (
        SOURCE, f"unpacks to {unpacked} bytes; at most {unpacked - 1} are read")


def test_a_page_exactly_at_the_page_limit_is_read_and_one_byte_more_is_refused():
    data = _numbers()
    assert len(_read(data, max_page_bytes=32)) == 10  # pages of 4 rows x 8 bytes, and of 1 row
    error = _refusal(data, max_page_bytes=31)
    assert (error.source, error.message, error.field) == (
        SOURCE, "has a page of 32 bytes; at most 31 are read", "score")


def test_the_pages_are_summed_over_pages_columns_and_row_groups_and_bounded_at_their_limit():
    data = _numbers()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    total = 2 * 2 * (32 + 8)  # row groups x columns x (a page of 4 rows + a page of 1 row)
    _check_pages(data, meta, SOURCE, total, 32)  # exactly at the limit: no refusal
    with pytest.raises(InputError) as refused:
        _check_pages(data, meta, SOURCE, total - 1, 32)  # only the last page passes it
    assert (refused.value.source, refused.value.message) == (
        SOURCE, f"unpacks to more than {total - 1} bytes (its pages' headers); "
                f"at most {total - 1} are read")


def test_a_file_that_decodes_to_exactly_the_limit_is_read_and_one_byte_less_refuses_it():
    """1,000 dictionary cells of 100 bytes: 100,000 bytes of text and 1,001 offsets of 4 bytes."""
    data = _dictionary_column(["x" * 100] * 1000)
    decoded = 1000 * 100 + 4 * 1001
    frame = _read(data, max_bytes=decoded)
    assert frame["scene_id"].tolist() == ["x" * 100] * 1000
    error = _refusal(data, max_bytes=decoded - 1)
    assert (error.source, error.message) == (
        SOURCE, f"decodes to more than {decoded - 1} bytes by line 1001; at most {decoded - 1} are read")


def test_the_decoded_size_accumulates_over_batches_and_names_the_line_of_the_last():
    """Three batches (65,536 + 65,536 + 10 rows) of one-byte cells, each far within the limit;
    only all three together pass it, by line 131,083 (the header is line 1)."""
    rows = 2 * BATCH_ROWS + 10
    data = _dictionary_column(["x"] * rows)
    decoded = rows * 1 + 4 * ((BATCH_ROWS + 1) * 2 + 11)
    assert len(_read(data, max_bytes=decoded)) == rows
    error = _refusal(data, max_bytes=decoded - 1)
    assert error.message == (f"decodes to more than {decoded - 1} bytes by line {rows + 1}; "
                             f"at most {decoded - 1} are read")


def test_a_batch_decodes_to_its_plain_columns_and_each_dictionary_expanded():
    """Every column counts: the text of the cells each dictionary column expands to (a null
    cell none) plus a 4-byte offset per row and one more, and a plain column its bytes."""
    first = pa.DictionaryArray.from_arrays(pa.array([0, 0, 0, 0], pa.int32()), pa.array(["xy"]))
    second = pa.DictionaryArray.from_arrays(pa.array([1, None, 2, 1], pa.int32()),
                                            pa.array(["", "abc", "hello"]))
    batch = pa.record_batch([first, pa.array([0.5, 1.0, 1.5, 2.0]), second],
                            names=["scene_id", "score", "experience_id"])
    assert _expanded_bytes(batch, SOURCE, 0, 1024, []) == (
        (4 * 2 + 4 * 5) + 4 * 8 + ((3 + 0 + 5 + 3) + 4 * 5))


def test_a_dictionary_cell_over_the_limit_is_named_by_its_first_line_length_and_column():
    """The first row using a too-long value is line 3 (row 0 is short, rows 1 and 3 too
    long): the message gives the first too-long value's length, before anything is expanded."""
    data = _dictionary_column(["a", "b" * 20, "a", "c" * 30, "a"])
    error = _refusal(data, max_cell_chars=10)
    assert (error.source, error.line, error.field, error.message) == (
        SOURCE, 3, "scene_id", "is a cell of 20 bytes; at most 10 are read")


def test_a_dictionary_value_no_row_uses_is_still_refused_without_a_line():
    values = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["a", "x" * 50]))
    error = _refusal(parquet_bytes(pa.table({"scene_id": values}), store_schema=False), max_cell_chars=10)
    assert (error.line, error.field, error.message) == (
        None, "scene_id", "is a cell of 50 bytes; at most 10 are read")


def test_cells_of_exactly_the_cell_limit_are_read_in_dictionary_and_plain_pages():
    for use_dictionary in (True, False):
        data = parquet_bytes(pa.table({"scene_id": ["a", "x" * 10]}), use_dictionary=use_dictionary)
        assert _read(data, max_cell_chars=10)["scene_id"].tolist() == ["a", "x" * 10]
        error = _refusal(data, max_cell_chars=9)
        assert (error.line, error.field, error.message) == (
            3, "scene_id", "is a cell of 10 bytes; at most 9 are read"), use_dictionary


def test_an_all_null_text_column_reads_as_nulls():
    """Its dictionary is empty: no value to look up for any row."""
    data = _dictionary_column([None, None])
    assert _read(data)["scene_id"].tolist() == [None, None]


def test_dictionary_text_reads_back_as_plain_text_not_categories():
    frame = _read(_dictionary_column(["s0", "s1", "s0"]))
    assert frame["scene_id"].dtype == object and frame["scene_id"].tolist() == ["s0", "s1", "s0"]


def test_a_file_without_row_groups_reads_as_an_empty_table_with_its_columns():
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, pa.schema([("scene_id", pa.string()), ("score", pa.float64())])):
        pass
    frame = _read(buffer.getvalue())
    assert list(frame.columns) == ["scene_id", "score"] and len(frame) == 0


def test_a_file_with_an_empty_row_group_reads_like_its_rows():
    """A writer given an empty table first writes a row group of no rows, whose column chunks
    point their data page at offset 0; the page check skips it rather than reading the file's
    magic as a page header (this test failed before the fix)."""
    table = pa.table({"scene_id": ["s1", "s2"], "score": [0.5, 1.0]})
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, table.schema) as writer:
        writer.write_table(table.slice(0, 0))
        writer.write_table(table)
    assert _read(buffer.getvalue())["score"].tolist() == [0.5, 1.0]


# --- What the schema admits ---------------------------------------------------------------

def test_text_columns_of_every_string_and_binary_type_are_read_as_text_but_not_stored_dictionaries():
    table = pa.table({"s": pa.array(["a"], pa.string()), "ls": pa.array(["a"], pa.large_string()),
                      "b": pa.array([b"a"], pa.binary()), "lb": pa.array([b"a"], pa.large_binary()),
                      "score": pa.array([0.5]),
                      "d": pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array(["a"]))})
    schema = pq.ParquetFile(io.BytesIO(parquet_bytes(table))).schema_arrow
    assert _check_schema(schema, SOURCE, ("score",)) == ["s", "ls", "b", "lb"]


@pytest.mark.parametrize("scores", [
    pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), pa.array([0.5, 1.0])),
    pa.array([None, None, None], pa.null()),
    pa.array([decimal.Decimal("0.5")] * 3, pa.decimal128(4, 2)),
], ids=["categorical-floats", "all-null", "decimal"])
def test_a_score_column_of_numbers_in_any_number_type_is_read(scores):
    data = parquet_bytes(pa.table({"scene_id": ["s0", "s1", "s2"], "score": scores}))
    assert len(read_bounded_parquet(data, SOURCE, number_columns=("score",), **LOOSE)) == 3


def test_text_where_numbers_are_expected_is_named_by_source_column_and_type():
    data = parquet_bytes(pa.table({"scene_id": ["s0"], "score": ["0.5"]}))
    with pytest.raises(InputError) as refused:
        read_bounded_parquet(data, SOURCE, number_columns=("score",), **LOOSE)
    assert (refused.value.source, refused.value.field, refused.value.message) == (
        SOURCE, "score", "is a string column; it must hold numbers (an integer or floating-point column)")


def test_a_nested_column_is_named_by_source_column_and_type():
    data = parquet_bytes(pa.table({"scene_id": ["s0"], "score": pa.array([[0.5]], pa.list_(pa.float64()))}))
    error = _refusal(data)
    assert (error.source, error.field, error.message) == (
        SOURCE, "score", "is a nested column (list<element: double>); only flat columns of "
                         "text or numbers are read")


def test_a_prefix_sharing_column_is_refused_with_the_encodings_to_use():
    data = parquet_bytes(pa.table({"scene_id": ["s0", "s1"]}), use_dictionary=False,
                    column_encoding={"scene_id": "DELTA_BYTE_ARRAY"})
    error = _refusal(data)
    assert (error.field, error.message) == (
        "scene_id", "is DELTA_BYTE_ARRAY-encoded, whose decoded size is unknown until it is "
                    "decoded; write the file with dictionary or plain encoding (the pandas and "
                    "pyarrow defaults)")


# --- The decoded-size limit and chunked bodies ----------------------------------------------

def test_the_decoded_limit_rises_to_the_need_and_never_falls_below_the_fixed_limit():
    assert UploadLimits().decoded_limit(1000) == 1000
    assert UploadLimits(decoded_bytes=5000).decoded_limit(1000) == 5000
    assert UploadLimits(decoded_bytes=500).decoded_limit(1000) == 1000


@pytest.mark.parametrize("encoding", ["chunked", "Chunked", "gzip, CHUNKED"])
def test_a_chunked_body_in_any_letter_case_is_handed_on_with_its_length(encoding):
    seen = {}

    def app(environ, start_response):
        seen.update(length=environ.get("CONTENT_LENGTH"), body=environ["wsgi.input"].read())
        return []

    environ = {"HTTP_TRANSFER_ENCODING": encoding, "wsgi.input": io.BytesIO(b"abc")}
    BoundedBody(app, 100)(environ, lambda *args: None)
    assert seen == {"length": "3", "body": b"abc"}
    assert "HTTP_TRANSFER_ENCODING" not in environ


def test_a_body_that_is_not_chunked_is_handed_on_as_it_came():
    seen = {}

    def app(environ, start_response):
        seen.update(length=environ.get("CONTENT_LENGTH"))
        return []

    BoundedBody(app, 100)({"HTTP_TRANSFER_ENCODING": "gzip", "wsgi.input": io.BytesIO(b"abc")},
                          lambda *args: None)
    assert seen == {"length": None}


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_string(), pa.large_binary()],
                         ids=["binary", "large_string", "large_binary"])
def test_long_cells_of_every_text_type_stored_whole_are_refused_at_their_line(kind):
    values = ["a", "x" * 20] if pa.types.is_large_string(kind) else [b"a", b"x" * 20]
    data = parquet_bytes(pa.table({"scene_id": pa.array(values, kind)}), use_dictionary=False)
    error = _refusal(data, max_cell_chars=10)
    assert (error.line, error.field, error.message) == (
        3, "scene_id", "is a cell of 20 bytes; at most 10 are read")


# --- JSON refusals and lines mapped back to the file -----------------------------------------

@pytest.mark.parametrize("document", [[], {"rows": {}}, 3])
def test_a_json_document_without_rows_is_refused_naming_rows(document):
    with pytest.raises(InputError) as refused:
        read_json_rows(json.dumps(document).encode(), "scores.json")
    assert (refused.value.source, refused.value.field, refused.value.message) == (
        "scores.json", "rows", 'JSON must be a non-empty list of row objects or {"rows": [...]}')


def test_a_long_row_that_is_not_an_object_is_shown_by_its_first_80_characters():
    row = ["x" * 100]
    with pytest.raises(InputError) as refused:
        read_json_rows(json.dumps([ROWS[0], row]).encode(), "scores.json")
    assert refused.value.value == json.dumps(row)[:80]


def test_an_unknown_key_is_named_by_line_and_its_first_80_characters_after_known_keys():
    key = "k" * 100
    rows = [ROWS[0], {"setting_id": "toy-k4", key: 1, "other": 2}]
    with pytest.raises(InputError) as refused:
        read_json_rows(json.dumps(rows).encode(), "scores.json")
    error = refused.value
    assert (error.source, error.line, error.field, error.value, error.message) == (
        "scores.json", 3, "header", key[:80],
        f"has the key '{key[:80]}', not a known column (expected: {', '.join(JSON_KEYS)})")


def test_a_line_of_a_settings_rows_is_mapped_back_to_its_line_in_the_file():
    index = pd.Index([5, 9])  # the setting's rows are data rows 5 and 9 of the upload
    shifted = _shift_line(InputError("t", "bad", line=2, field="score", value="x"), index, "up.csv")
    assert (shifted.source, shifted.line, shifted.field, shifted.value, shifted.message) == (
        "up.csv", 7, "score", "x", "bad")
    assert _shift_line(InputError("t", "bad", line=3), index, "up.csv").line == 11
    for outside in (1, 4):  # not a row of the table (the header; past its end): kept as it is
        assert _shift_line(InputError("t", "bad", line=outside), index, "up.csv").line == outside
    unlined = InputError("t", "bad")
    assert _shift_line(unlined, index, "up.csv") is unlined


# --- The CSV row pre-count ---------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"scene_id,score\ns0,1\ns1,2\n",  # LF, ending in a line end
    b"scene_id,score\ns0,1\ns1,2",  # no final line end
    b"scene_id,score\r\ns0,1\r\ns1,2\r\n",  # CRLF: one break each
    b"scene_id,score\rs0,1\rs1,2\r",  # CR alone
    b"scene_id,score\r\ns0,1\ns1,2\r",  # mixed
], ids=["lf", "unterminated", "crlf", "cr", "mixed"])
def test_the_csv_pre_count_counts_data_rows_whatever_the_line_ends(body):
    assert count_rows_upper_bound(body, "csv") == 2


def test_a_csv_one_row_over_the_limit_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 2)
    body = b"scene_id,experience_id,score\r\ns0,e0,1\r\ns1,e1,2\r\n"
    assert len(read_frame(body, "csv", "s.csv")) == 2
    with pytest.raises(InputError) as refused:
        read_frame(body + b"s2,e2,3\r\n", "csv", "s.csv")
    assert (refused.value.source, refused.value.message) == (
        "s.csv", "has more than 2 rows; at most 2 are read")


# --- Sizing a full file, the settings asked for and the rows per setting --------------------

def test_a_full_file_needs_the_longest_json_row_per_pair_and_its_decoded_text():
    experiences, scenes = ["e1", "e22"], ["s1"]
    longest = {"setting_id": "toy", "scene_id": "s1", "experience_id": "e22",
               "score": -2.2250738585072014e-308}
    row = len(json.dumps(longest)) + len(", ")
    need = full_file_needs("toy", experiences, scenes)
    assert need == UploadLimits(body_bytes=2 * row + MULTIPART_BYTES, rows=2,
                                decoded_bytes=2 * (3 * 4 + 8 + len("toy" "s1" "e22")))


def test_a_setting_without_scenes_needs_no_rows():
    assert full_file_needs("toy", ["e1"], []) == UploadLimits(
        body_bytes=MULTIPART_BYTES, rows=0, decoded_bytes=0)


def test_the_settings_field_is_split_at_commas_only():
    assert requested_settings(" a, b,,c ") == ["a", "b", "c"]
    assert requested_settings("a b") == ["a b"]
    assert requested_settings(None) == requested_settings("") == []


@pytest.mark.parametrize("requested, shown", [([], "none"), (["a", "b"], "['a', 'b']")])
def test_rows_without_setting_ids_need_exactly_one_setting_named(requested, shown):
    frame = pd.DataFrame({"scene_id": ["s0"], "experience_id": ["e0"], "score": [1.0]})
    with pytest.raises(FieldError) as refused:
        split_by_setting(frame, requested, "s.csv")
    assert refused.value.field == "setting"
    assert refused.value.message == ("name exactly one setting (field 'setting') or add a "
                                     f"'setting_id' column to the file; got {shown}")


def test_an_unknown_setting_id_is_named_by_its_first_line_and_known_ones_are_kept_whole():
    summary, data = synthetic_setting("toy-k2", k=2, n_states=1, draws=2)
    rows = scores_rows(data, setting_id="toy-k2")
    frame = pd.DataFrame(rows[:2] + [{**rows[0], "setting_id": "nowhere"}] + rows[2:], dtype=object)
    with pytest.raises(InputError) as refused:
        validate_upload(frame, [], StaticCatalog({summary: data}), "s.csv")
    error = refused.value
    assert (error.source, error.line, error.field, error.value, error.message) == (
        "s.csv", 4, "setting_id", "nowhere", "is not a known setting")
    validated = validate_upload(pd.DataFrame(rows, dtype=object), [], StaticCatalog({summary: data}),
                                "s.csv")
    assert [(v.setting_id, v.scores.shape, v.selection_only) for v in validated] == [
        ("toy-k2", (2, 2), False)]
