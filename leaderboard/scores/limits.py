"""The limits of an uploaded scores file, checked before and while it is parsed.

Fixed limits (rows, decoded Parquet bytes, cells, columns, pages) bound what
a hostile file costs. A full scores file has one row per (experience, scene)
pair, so a setting of K x Q pairs needs K x Q rows: a lab serving a K = 1,000
x 2,000-scene matrix needs 2,000,000 rows (105 MB as CSV, 174 MB as compact
JSON, as `benchmarks/lab_submission_bench.py` writes them). Where the largest
setting needs more, `UploadLimits` raises the limits to what a full file of
it needs in the most verbose format (JSON rows with the longest ids and the
longest float text). They remain bounds checked before parsing: the rows of a
CSV (its line ends), a JSON (its opening braces) or a Parquet file (its
footer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterable

MAX_PARQUET_ROWS = 1_000_000
"""Rows an upload may hold, in any format (a CSV within the upload limit holds at most about as many)."""
MAX_PARQUET_UNPACKED_BYTES = 256 * 1024 * 1024
"""Size a Parquet upload may decode to: checked against its footer first, then against what
is really decoded, batch by batch (a footer can understate it a thousandfold)."""
MAX_PARQUET_CELL_CHARS = 1024
"""Longest text cell (bytes) of a Parquet upload; ids are a few dozen characters, and a
longer cell is refused from the file's dictionary before it is repeated into every row."""
MAX_PARQUET_COLUMNS = 16
"""Columns a Parquet upload may have: the scores table has four (plus a stored index)."""
MAX_PARQUET_PAGE_BYTES = 64 * 1024 * 1024
"""Largest page of a Parquet upload, as its header states before it is decompressed: writers
make pages of about 1 MB (pyarrow: 1 MB or 20,000 rows); a hostile page can ask for 2 GB."""
NUMBER_COLUMNS = ("score",)
"""Columns that must hold numbers: a Parquet text column there is refused from its type."""

SCORE_TEXT_BYTES = len(repr(-2.2250738585072014e-308))
"""Longest text of a float64 score as Python writes it (24 characters)."""

JSON_ROW_BYTES = len(json.dumps({"setting_id": "", "scene_id": "", "experience_id": "", "score": 0})) - 7 + 2
"""Keys and punctuation of one JSON row object, its separator ", " included (values excluded)."""

CSV_ROW_BYTES = 3 + 2
"""Three commas (setting_id, scene_id, experience_id, score) and a CRLF line end."""

PARQUET_ROW_BYTES = 3 * 4 + 8
"""Decoded Parquet row besides its text: three 32-bit string offsets and one float64."""

MULTIPART_BYTES = 64 * 1024
"""Room for the multipart envelope and the other form fields of the request."""

FLOOR_ROWS = 1_000_000
"""Below this need the fixed row limit (`MAX_PARQUET_ROWS`) holds as it is."""

FLOOR_DECODED_BYTES = 256 * 1024 * 1024
"""Below this need the fixed decoded-size limit of a Parquet upload (`MAX_PARQUET_UNPACKED_BYTES`)
holds as it is."""


@dataclass(frozen=True)
class UploadLimits:
    """What a full scores file of the largest setting needs, where that is above the floors.

    body_bytes: request body; rows: data rows of a file of any format;
    decoded_bytes: what a Parquet file decodes to. None where the floor
    already admits it, so that the configured or fixed limit applies unchanged.
    """

    body_bytes: int | None = None
    rows: int | None = None
    decoded_bytes: int | None = None

    def body_limit(self, configured: int) -> int:
        """The request body limit: the configured one, raised to the need."""
        return configured if self.body_bytes is None else max(configured, self.body_bytes)

    def row_limit(self, fixed: int) -> int:
        """The row limit of one upload: the fixed one, raised to the need."""
        return fixed if self.rows is None else max(fixed, self.rows)

    def decoded_limit(self, fixed: int) -> int:
        """The decoded-size limit of a Parquet upload: the fixed one, raised to the need."""
        return fixed if self.decoded_bytes is None else max(fixed, self.decoded_bytes)


def full_file_needs(setting_id: str, experience_ids, scene_ids) -> UploadLimits:
    """Body bytes, rows and decoded Parquet bytes of a full scores file of one setting.

    K x Q rows; a row is as long as a JSON row object (keys, punctuation,
    the longest ids and the longest score text), the longest of the formats.
    """
    pairs = len(experience_ids) * len(scene_ids)
    ids = (experience_ids, scene_ids, (setting_id,))
    quoted = sum(max((len(json.dumps(i)) for i in group), default=0) for group in ids)
    raw = sum(max((len(i.encode()) for i in group), default=0) for group in ids)
    row = max(JSON_ROW_BYTES, CSV_ROW_BYTES) + quoted + SCORE_TEXT_BYTES
    return UploadLimits(body_bytes=pairs * row + MULTIPART_BYTES, rows=pairs,
                        decoded_bytes=pairs * (PARQUET_ROW_BYTES + raw))


def largest_needs(needs: Iterable[UploadLimits], *, floor_body_bytes: int) -> UploadLimits:
    """The largest of several settings' needs, each kept only where it exceeds its floor
    (`floor_body_bytes`, `FLOOR_ROWS`, `FLOOR_DECODED_BYTES`)."""
    body, rows, decoded = 0, 0, 0
    for need in needs:
        body, rows = max(body, need.body_bytes or 0), max(rows, need.rows or 0)
        decoded = max(decoded, need.decoded_bytes or 0)
    return UploadLimits(body_bytes=body if body > floor_body_bytes else None,
                        rows=rows if rows > FLOOR_ROWS else None,
                        decoded_bytes=decoded if decoded > FLOOR_DECODED_BYTES else None)


def count_rows_upper_bound(data: bytes, fmt: str) -> int:
    """An upper bound on the data rows of a CSV or JSON upload, without parsing it.

    CSV: line breaks (LF, CR or CRLF; a row is one line, the header one of
    them). JSON: opening braces (every row is an object), less the one of a
    wrapping `{"rows": [...]}` object. Parquet reports its own count in its
    footer.
    """
    if fmt == "csv":
        breaks = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        return breaks + (0 if data.endswith((b"\n", b"\r")) else 1) - 1
    start = _LEADING_SPACE.match(data).end()
    return data.count(b"{") - (1 if data[start:start + 1] == b"{" else 0)


_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
"""JSON whitespace before the document's first value."""
