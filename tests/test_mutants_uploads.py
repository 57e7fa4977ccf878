"""A JSON upload's two forms and what its refusals name.

What mutation testing of the uploads showed untested here: the
`{"rows": [...]}` form, and the source, line, field and value of a row
that is not an object or a document too deeply nested.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from leaderboard.errors import InputError
from service.uploads import _json_frame

ROWS = [{"setting_id": "toy-k4", "scene_id": "s0", "experience_id": "e1", "score": 0.5},
        {"setting_id": "toy-k4", "scene_id": "s1", "experience_id": "e2"}]


def test_a_json_object_with_rows_reads_like_the_list_itself():
    as_object = _json_frame(json.dumps({"rows": ROWS}).encode(), "scores.json")
    as_list = _json_frame(json.dumps(ROWS).encode(), "scores.json")
    pd.testing.assert_frame_equal(as_object, as_list)
    assert list(as_object.columns) == ["setting_id", "scene_id", "experience_id", "score"]
    assert as_object["score"].tolist() == [0.5, None]


def test_a_row_that_is_not_an_object_is_named_by_line_field_and_value():
    with pytest.raises(InputError) as refused:
        _json_frame(json.dumps([ROWS[0], [1, 2]]).encode(), "scores.json")
    error = refused.value
    assert (error.source, error.message, error.line, error.field, error.value) == (
        "scores.json", "is not an object", 3, "rows", "[1, 2]")


def test_a_document_nested_too_deeply_is_refused_as_invalid_json():
    with pytest.raises(InputError) as refused:
        _json_frame(b"[" * 100_000 + b"]" * 100_000, "scores.json")
    assert refused.value.source == "scores.json"
    assert refused.value.message == "is not valid JSON: nested too deeply"
