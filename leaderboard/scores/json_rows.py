"""A JSON scores upload: a list of row objects, or ``{"rows": [...]}``, read into a table."""

from __future__ import annotations

import json

import pandas as pd

from leaderboard.errors import InputError

JSON_KEYS = ("setting_id", "scene_id", "experience_id", "score")
"""Keys a JSON row may have: any other is refused in the row loop, before a table is built
(a new key per row would otherwise make a column per key, rows x keys cells)."""


def read_json_rows(data: bytes, source: str) -> pd.DataFrame:
    """Rows of a JSON upload, every value as written (a missing key or null is an empty cell)."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, and integers too long to read
        raise InputError(source, f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(source, "is not valid JSON: nested too deeply") from None
    rows = document.get("rows") if isinstance(document, dict) else document
    if not isinstance(rows, list) or not rows:
        raise InputError(source, "JSON must be a non-empty list of row objects or {\"rows\": [...]}",
                         field="rows")
    known = set(JSON_KEYS)
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(source, "is not an object", line=position + 2, field="rows",
                             value=json.dumps(row)[:80])
        if not known.issuperset(row):
            key = next(k for k in row if k not in known)
            raise InputError(source, f"has the key '{key[:80]}', not a known column (expected: "
                             f"{', '.join(JSON_KEYS)})", line=position + 2, field="header",
                             value=key[:80])
    columns = [c for c in JSON_KEYS if any(c in row for row in rows)]
    return pd.DataFrame({c: [row.get(c) for row in rows] for c in columns}, dtype=object)
