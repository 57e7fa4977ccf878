"""What mutation testing of the uploads left untested after `test_mutants_uploads.py`.

The Parquet reader: a dictionary page offset of 0 (no dictionary page), which
columns are read as dictionaries whatever the footer's encodings say, a
too-long dictionary value named by the line of the first row using it in
any batch, and the message of a reader error without text. Around it: the
format of an upload, the fields of a create request, the middleware serving
the app at the root, the limits of a catalog whose settings are skipped, and
a listed setting whose data cannot be loaded.
"""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import flask
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import leaderboard.scores.limits
import leaderboard.scores.parquet
from leaderboard.errors import InputError
from service.catalog.catalog import DataUnavailable, StaticCatalog, UnknownSetting
from service.errors import ValidationFailed
from service.submissions.form_fields import request_fields
from leaderboard.scores.parquet import BATCH_ROWS, _check_pages, _expanding, read_bounded_parquet
from service.web.request_body import BoundedBody, FixedScriptName
from leaderboard.scores.limits import UploadLimits, full_file_needs
from service.submissions.limits import FLOOR_BODY_BYTES, catalog_limits
from leaderboard.scores.upload import FieldError, detect_format, read_frame, validate_upload
from tests.support.servers import synthetic_setting
from tests.support.uploads import LOOSE, SOURCE, parquet_bytes


def _refusal(data: bytes, **limits) -> InputError:
    with pytest.raises(InputError) as refused:
        read_bounded_parquet(data, SOURCE, **{**LOOSE, **limits})
    return refused.value


# --- Footers pyarrow does not write -----------------------------------------------------------

class _Chunk:
    """A column chunk of a real footer with some of its fields stated otherwise."""

    def __init__(self, chunk, **stated) -> None:
        self._chunk, self._stated = chunk, stated

    def __getattr__(self, name):
        return self._stated[name] if name in self._stated else getattr(self._chunk, name)


class _Footer:
    """A real file's footer whose every column chunk states `stated` instead."""

    def __init__(self, meta, **stated) -> None:
        self._meta, self._stated = meta, stated
        self.num_row_groups = meta.num_row_groups

    def row_group(self, index):
        group = self._meta.row_group(index)
        return SimpleNamespace(num_rows=group.num_rows, num_columns=group.num_columns,
                               column=lambda i: _Chunk(group.column(i), **self._stated))


def test_a_dictionary_page_offset_of_0_means_no_dictionary_page_and_the_pages_are_read_from_the_data():
    """Some writers store offset 0 for "no dictionary page" while flagging one: the page check
    then starts at the data page, as Arrow does, not at the file's magic."""
    schema = pa.schema([pa.field("score", pa.float64(), nullable=False)])  # no levels: 8 bytes a row
    table = pa.table({"score": [0.5, 1.0, 1.5, 2.0]}, schema=schema)
    data = parquet_bytes(table, use_dictionary=False, compression="none", store_schema=False)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    chunk = meta.row_group(0).column(0)
    assert not chunk.has_dictionary_page
    size = chunk.total_uncompressed_size
    footer = _Footer(meta, has_dictionary_page=True, dictionary_page_offset=0)
    _check_pages(data, footer, SOURCE, 32, 32)  # one data page of 4 x 8 bytes, at its limits
    with pytest.raises(InputError) as refused:
        _check_pages(data, footer, SOURCE, 31, 32)
    assert refused.value.message == "unpacks to more than 31 bytes (its pages' headers); at most 31 are read"
    assert size > 32  # the chunk's size counts the page header too: only the page is summed


@pytest.mark.parametrize("offset", [1, 3])
def test_a_dictionary_page_offset_inside_the_magic_is_where_the_page_check_starts_too(offset):
    """Arrow starts a chunk at any dictionary page offset above 0 and before the data page, so
    a hostile footer pointing into the file's first bytes has its "page" checked there: no
    valid page header is found and the file is unreadable (the check does not skip to the data
    page while Arrow decompresses what it finds at the offset)."""
    schema = pa.schema([pa.field("score", pa.float64(), nullable=False)])
    data = parquet_bytes(pa.table({"score": [0.5, 1.0]}, schema=schema), use_dictionary=False,
                    compression="none", store_schema=False)
    footer = _Footer(pq.ParquetFile(io.BytesIO(data)).metadata, has_dictionary_page=True,
                     dictionary_page_offset=offset)
    with pytest.raises(ValueError, match="^a page header has no valid page sizes$"):
        _check_pages(data, footer, SOURCE, 10**9, 10**9)


def test_a_column_with_a_dictionary_page_or_a_dictionary_encoding_is_read_as_a_dictionary():
    """Either is enough, whatever the footer says of the other: a dictionary page listed with
    only literal encodings, or a dictionary encoding listed without a dictionary page."""
    data = parquet_bytes(pa.table({"scene_id": ["s0", "s1"], "experience_id": ["e0", "e1"]}),
                    use_dictionary=False)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    assert set(meta.row_group(0).column(0).encodings) <= {"PLAIN", "RLE", "BIT_PACKED"}
    assert _expanding(meta, SOURCE) == set()
    assert _expanding(_Footer(meta, has_dictionary_page=True), SOURCE) == {"scene_id", "experience_id"}
    stated = _Footer(meta, has_dictionary_page=False, encodings=("PLAIN", "RLE", "RLE_DICTIONARY"))
    assert _expanding(stated, SOURCE) == {"scene_id", "experience_id"}


# --- A too-long dictionary value, by the line of the row using it --------------------------

def test_a_too_long_dictionary_value_first_used_after_the_first_batch_is_named_by_its_line():
    """One row group, so every batch holds its whole dictionary; the first batch uses only the
    short value. The row using the long one is data row BATCH_ROWS + 3, line BATCH_ROWS + 5
    (this test failed before: the first batch refused it without a line)."""
    values = ["a"] * (BATCH_ROWS + 3) + ["x" * 20] + ["a"] * 5
    data = parquet_bytes(pa.table({"scene_id": values}), store_schema=False)
    assert pq.ParquetFile(io.BytesIO(data)).metadata.num_row_groups == 1
    error = _refusal(data, max_cell_chars=10)
    assert (error.source, error.line, error.field, error.message) == (
        SOURCE, BATCH_ROWS + 5, "scene_id", "is a cell of 20 bytes; at most 10 are read")


def test_a_too_long_dictionary_value_is_named_by_the_length_of_the_value_at_its_line():
    """The dictionary lists a 30-byte value before the 20-byte one the first long row uses."""
    values = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1, 0], pa.int32()),
                                            pa.array(["a", "b" * 30, "c" * 20]))
    error = _refusal(parquet_bytes(pa.table({"scene_id": values}), store_schema=False), max_cell_chars=10)
    assert (error.line, error.field, error.message) == (
        3, "scene_id", "is a cell of 20 bytes; at most 10 are read")


def test_a_too_long_dictionary_value_no_row_of_any_batch_uses_is_refused_without_a_line():
    values = pa.DictionaryArray.from_arrays(pa.array([0] * (BATCH_ROWS + 2), pa.int32()),
                                            pa.array(["a", "x" * 50]))
    error = _refusal(parquet_bytes(pa.table({"scene_id": values}), store_schema=False), max_cell_chars=10)
    assert (error.source, error.line, error.field, error.message) == (
        SOURCE, None, "scene_id", "is a cell of 50 bytes; at most 10 are read")


# --- A reader error without text ----------------------------------------------------------

@pytest.mark.parametrize("error, shown", [(OSError(), "OSError"), (ValueError("  \n"), "ValueError"),
                                          (ValueError("bad header\nat byte 4"), "bad header")],
                         ids=["no-text", "blank", "two-lines"])
def test_a_reader_error_is_named_by_its_first_line_or_else_its_type(monkeypatch, error, shown):
    def unreadable(*args):
        raise error

    monkeypatch.setattr(leaderboard.scores.parquet, "page_sizes", unreadable)
    refused = _refusal(parquet_bytes(pa.table({"score": [0.5]})))
    assert (refused.source, refused.message) == (SOURCE, f"cannot be read as parquet: {shown}")


# --- The format of an upload ----------------------------------------------------------------

@pytest.mark.parametrize("filename, content_type, explicit, fmt", [
    ("s.csv", "application/json", "parquet", "parquet"),  # the field first
    ("s.json", None, "csv", "csv"),
    (None, None, "json", "json"),
    ("s.CSV", "application/json", None, "csv"),  # then the name, in any case
    ("s.parquet", "text/csv", "", "parquet"),
    ("s.Pq", None, None, "parquet"),
    ("s.JSON", None, None, "json"),
    ("scores", "text/csv", None, "csv"),  # then the type, with parameters, in any case
    ("s.txt", "Application/JSON; charset=utf-8", None, "json"),
    (None, " application/vnd.apache.parquet ", None, "parquet"),
    ("", "application/x-parquet;x=1", None, "parquet"),
    ("csv", "application/json", None, "json"),  # a name that only ends in a format's letters
])
def test_the_format_is_the_field_else_the_file_suffix_else_the_content_type(filename, content_type,
                                                                           explicit, fmt):
    assert detect_format(filename, content_type, explicit) == fmt


def test_an_unknown_format_field_is_refused_naming_the_formats():
    with pytest.raises(FieldError) as refused:
        detect_format("s.csv", "text/csv", "xlsx")
    assert (refused.value.field, refused.value.message) == (
        "format", "format must be one of ['csv', 'parquet', 'json'], got 'xlsx'")


@pytest.mark.parametrize("filename, content_type, shown", [
    ("s.txt", "text/plain", "s.txt"), (None, None, "the upload"), ("", "text/csv2", "the upload")])
def test_a_format_no_field_name_or_type_tells_is_refused_naming_the_file(filename, content_type, shown):
    with pytest.raises(FieldError) as refused:
        detect_format(filename, content_type, None)
    assert (refused.value.field, refused.value.message) == (
        "format", f"cannot tell the format of '{shown}': name the file *.csv, *.parquet or *.json, "
                  "or pass format=csv|parquet|json")


# --- The fields of a create request ------------------------------------------------------------

FORMS = flask.Flask(__name__)


def _fields(path: str = "/", **request):
    with FORMS.test_request_context(path, method="POST", **request):
        return request_fields(flask.request)


def _multipart(path: str = "/", **data):
    return _fields(path, data={"file": (io.BytesIO(b"x"), "s.csv"), **data},
                   content_type="multipart/form-data")


def _field_refusal(call, *args, **kwargs) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as refused:
        call(*args, **kwargs)
    return refused.value


def test_a_multipart_upload_reads_its_fields_from_the_form_and_a_raw_body_from_the_query():
    assert _multipart(setting="toy-k4", name="run") == {"setting": "toy-k4", "name": "run"}
    assert _fields("/?setting=toy-k4&format=csv", data=b"x", content_type="text/csv") == {
        "setting": "toy-k4", "format": "csv"}


def test_query_parameters_on_a_multipart_upload_name_the_first_of_them_cut_to_80_characters():
    name = "q" * 100
    error = _field_refusal(_multipart, f"/?{name}=1&setting=x")
    assert (error.field, error.message) == (
        name[:80], "a multipart upload reads its fields from the form, not the query string: "
                   f"send '{name[:80]}' as a form field")


def test_a_second_file_part_is_refused_naming_the_part_cut_to_80_characters():
    name = "f" * 100
    parts = [(io.BytesIO(b"x"), "a.csv"), (io.BytesIO(b"y"), "b.csv")]
    error = _field_refusal(_multipart, **{name: parts})
    assert (error.field, error.message) == (name[:80], f"the upload has more than one '{name[:80]}' part")
    assert _multipart(other=(io.BytesIO(b"y"), "b.csv")) == {}  # two parts of two names: read


@pytest.mark.parametrize("where", ["form", "query"])
def test_a_field_given_twice_is_refused_naming_it_cut_to_80_characters(where):
    name = "n" * 100
    if where == "form":
        error = _field_refusal(_multipart, setting="x", **{name: ["a", "b"]})
    else:
        error = _field_refusal(_fields, f"/?setting=x&{name}=a&{name}=b", data=b"x",
                               content_type="text/csv")
    assert (error.field, error.message) == (name[:80], f"field '{name[:80]}' is given more than once")


# --- A chunked body held to the limit ---------------------------------------------------------

class _Pieces:
    """A chunked body as a server hands it on: at most `piece` bytes a read, whatever is asked."""

    def __init__(self, body: bytes, piece: int) -> None:
        self.body, self.piece = body, piece

    def read(self, size=-1) -> bytes:
        size = len(self.body) if size is None or size < 0 else size
        out, self.body = self.body[:min(size, self.piece)], self.body[min(size, self.piece):]
        return out


def _handed_on(limit, stream, **environ) -> dict:
    seen = {}

    def app(environ, start_response):
        seen.update(length=environ.get("CONTENT_LENGTH"), encoding=environ.get("HTTP_TRANSFER_ENCODING"),
                    body=environ["wsgi.input"].read())
        return []

    BoundedBody(app, limit)({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": stream, **environ},
                            lambda *args: None)
    return seen


BODY = bytes(range(256)) * 800  # 204,800 bytes, no two neighbouring pieces alike


@pytest.mark.parametrize("limit", [10, lambda: 10], ids=["number", "read-per-request"])
@pytest.mark.parametrize("piece", [1, 5, 64 * 1024], ids=["bytes", "pieces", "whole"])
def test_a_chunked_body_past_the_limit_is_handed_on_one_byte_past_it_however_it_arrives(limit, piece):
    """Read until one byte past the limit, also when the pieces end exactly at the limit: the
    app sees a body over it (refused with its 413), never one cut down to the limit."""
    assert _handed_on(limit, _Pieces(BODY[:25], piece)) == {"length": "11", "encoding": None,
                                                            "body": BODY[:11]}


@pytest.mark.parametrize("piece", [1, 5, 64 * 1024], ids=["bytes", "pieces", "whole"])
def test_a_chunked_body_exactly_at_the_limit_is_handed_on_whole(piece):
    assert _handed_on(10, _Pieces(BODY[:10], piece)) == {"length": "10", "encoding": None,
                                                         "body": BODY[:10]}


def test_a_large_chunked_body_is_read_in_pieces_to_one_byte_past_the_limit_and_no_further():
    stream = io.BytesIO(BODY)
    assert _handed_on(100_000, stream) == {"length": "100001", "encoding": None, "body": BODY[:100_001]}
    assert stream.tell() == 100_001


def test_a_body_with_a_length_is_handed_on_as_it_came_whatever_its_transfer_encoding():
    stream = io.BytesIO(BODY[:25])
    assert _handed_on(10, stream, CONTENT_LENGTH="25") == {"length": "25", "encoding": "chunked",
                                                           "body": BODY[:25]}


# --- The app served at the root --------------------------------------------------------------

def _seen_by_app(environ: dict) -> tuple[dict, object]:
    seen = {}

    def app(environ, start_response):
        seen.update(script=environ.get("SCRIPT_NAME"), path=environ.get("PATH_INFO"))
        return ["body"]

    return seen, FixedScriptName(app)(environ, lambda *args: None)


@pytest.mark.parametrize("environ, path", [
    ({"SCRIPT_NAME": "/api", "PATH_INFO": "/v1/settings"}, "/api/v1/settings"),
    ({"SCRIPT_NAME": "/api"}, "/api"),
    ({"SCRIPT_NAME": "", "PATH_INFO": "/v1/settings"}, "/v1/settings"),
], ids=["prefix", "prefix-only", "empty"])
def test_a_script_name_goes_back_onto_the_path_and_the_app_answers_as_it_would(environ, path):
    seen, answer = _seen_by_app(dict(environ))  # a copy: the middleware edits the environ it is given
    assert seen == {"script": "", "path": path}
    assert answer == ["body"]


def test_a_request_without_a_script_name_reaches_the_app_unchanged():
    seen, answer = _seen_by_app({"PATH_INFO": "/healthz"})
    assert seen == {"script": None, "path": "/healthz"}
    assert answer == ["body"]


# --- Catalog-wide limits and settings that cannot be read --------------------------------------

class _Sizes:
    """A catalog listing settings by id: their (experience ids, scene ids), or what reading them raises."""

    def __init__(self, settings: dict) -> None:
        self.settings = settings

    def list_settings(self):
        return [SimpleNamespace(id=setting_id) for setting_id in self.settings]

    def pair_ids(self, setting_id):
        pairs = self.settings[setting_id]
        if isinstance(pairs, Exception):
            raise pairs
        return pairs


def test_settings_whose_ids_cannot_be_read_are_skipped_and_logged_and_the_rest_still_count(caplog):
    experiences = tuple(f"e{i}" for i in range(1001))
    scenes = tuple(f"s{i}" for i in range(1000))
    catalog = _Sizes({"gone": DataUnavailable("gone", "not built"), "damaged": InputError("x.csv", "bad"),
                      "big": (experiences, scenes), "small": (("e0",), ("s0",))})
    need = full_file_needs("big", experiences, scenes)
    assert need.rows > 1_000_000 and need.body_bytes > FLOOR_BODY_BYTES
    with caplog.at_level(logging.INFO, logger="service.submissions.limits"):
        limits = catalog_limits(catalog)
    assert (limits.rows, limits.body_bytes, limits.decoded_bytes) == (need.rows, need.body_bytes, None)
    assert [r.getMessage() for r in caplog.records] == [
        "upload limits: setting gone skipped (DataUnavailable)",
        "upload limits: setting damaged skipped (InputError)"]


class _Unloadable(StaticCatalog):
    """Lists its settings but has the data of none of them."""

    def load_transfer(self, setting_id):
        raise UnknownSetting(setting_id)


def test_a_listed_setting_whose_data_cannot_be_loaded_is_named_without_a_line_when_the_file_has_no_ids():
    summary, data = synthetic_setting("toy-k2", k=2, n_states=1, draws=2)
    frame = pd.DataFrame({"scene_id": ["s0"], "experience_id": ["e0"], "score": [1.0]}, dtype=object)
    with pytest.raises(InputError) as refused:
        validate_upload(frame, ["toy-k2"], _Unloadable({summary: data}), "s.csv")
    error = refused.value
    assert (error.source, error.line, error.field, error.value, error.message) == (
        "s.csv", None, "setting_id", "toy-k2", "is not a known setting")


# --- Row groups of no rows are skipped, and only they ---------------------------------------

def _after_an_empty_row_group(table) -> bytes:
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, table.schema, use_dictionary=False, compression="none") as writer:
        writer.write_table(table.slice(0, 0))
        writer.write_table(table)
    return buffer.getvalue()


def test_the_pages_after_an_empty_row_group_are_still_checked():
    schema = pa.schema([pa.field("score", pa.float64(), nullable=False)])  # no levels: 8 bytes a row
    data = _after_an_empty_row_group(pa.table({"score": [0.5, 1.0, 1.5, 2.0]}, schema=schema))
    assert [pq.ParquetFile(io.BytesIO(data)).metadata.row_group(i).num_rows for i in (0, 1)] == [0, 4]
    assert read_bounded_parquet(data, SOURCE, **{**LOOSE, "max_page_bytes": 32})["score"].tolist() == [
        0.5, 1.0, 1.5, 2.0]
    error = _refusal(data, max_page_bytes=31)
    assert (error.field, error.message) == ("score", "has a page of 32 bytes; at most 31 are read")


def test_text_after_an_empty_row_group_and_in_a_row_group_of_one_row_is_read_as_a_dictionary():
    meta = pq.ParquetFile(io.BytesIO(parquet_bytes(pa.table({"scene_id": ["s0"]})))).metadata
    assert (meta.num_row_groups, meta.row_group(0).num_rows) == (1, 1)
    assert _expanding(meta, SOURCE) == {"scene_id"}
    buffer = io.BytesIO()
    table = pa.table({"scene_id": ["s0", "s1"]})
    with pq.ParquetWriter(buffer, table.schema) as writer:
        writer.write_table(table.slice(0, 0))
        writer.write_table(table)
    assert _expanding(pq.ParquetFile(buffer).metadata, SOURCE) == {"scene_id"}


class _Unlisted(_Sizes):
    """A catalog that cannot list its settings until `failures` are used up."""

    def __init__(self, settings: dict, failures: list[Exception]) -> None:
        super().__init__(settings)
        self.failures = failures

    def list_settings(self):
        if self.failures:
            raise self.failures.pop(0)
        return super().list_settings()


def test_a_catalog_that_cannot_list_its_settings_gives_the_floors_with_a_warning_until_it_can(caplog):
    experiences, scenes = tuple(f"e{i}" for i in range(1001)), tuple(f"s{i}" for i in range(1000))
    catalog = _Unlisted({"big": (experiences, scenes)}, [OSError("gone"), ValueError("damaged")])
    with caplog.at_level(logging.WARNING, logger="service.submissions.limits"):
        assert catalog_limits(catalog) == catalog_limits(catalog) == UploadLimits()
    assert [r.getMessage() for r in caplog.records] == [
        f"upload limits: the catalog's settings cannot be read ({kind}); fixed limits apply"
        for kind in ("OSError", "ValueError")]
    assert catalog_limits(catalog).rows == 1001 * 1000  # read once it can be: nothing was cached


# --- Reading an upload's table ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_an_empty_file_is_refused_as_empty_in_every_format(fmt):
    with pytest.raises(InputError) as refused:
        read_frame(b"", fmt, f"s.{fmt}")
    assert (refused.value.source, refused.value.message) == (f"s.{fmt}", "file is empty")


def test_a_parquet_upload_is_counted_by_its_footer_not_by_the_braces_of_its_bytes(monkeypatch):
    """The JSON pre-count counts opening braces; the pandas metadata of a Parquet file holds many."""
    monkeypatch.setattr(leaderboard.scores.limits, "MAX_PARQUET_ROWS", 2)
    buffer = io.BytesIO()
    pd.DataFrame({"scene_id": ["s0", "s1"], "experience_id": ["e0", "e0"], "score": [0.5, 1.0]}).to_parquet(
        buffer, index=False)
    data = buffer.getvalue()
    assert data.count(b"{") > 2
    assert read_frame(data, "parquet", "s.parquet")["score"].tolist() == [0.5, 1.0]


def test_text_scores_in_a_parquet_upload_are_refused_from_its_schema_naming_the_column():
    data = parquet_bytes(pa.table({"scene_id": ["s0"], "experience_id": ["e0"], "score": ["0.5"]}))
    with pytest.raises(InputError) as refused:
        read_frame(data, "parquet", "s.parquet")
    assert (refused.value.source, refused.value.field, refused.value.message) == (
        "s.parquet", "score", "is a string column; it must hold numbers (an integer or floating-point column)")
