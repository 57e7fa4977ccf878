"""Upload limits derived from the settings' sizes: a full scores file of the largest setting fits.

A scores file has one row per (experience, scene) pair, so a setting of
K x Q pairs needs K x Q rows: a lab serving a K = 1,000 x 2,000-scene matrix
needs 2,000,000 rows (105 MB as CSV, 174 MB as compact JSON, as
`benchmarks/lab_submission_bench.py` writes them), over the fixed
limits (`MAX_UPLOAD_BYTES`, `service.uploads.MAX_PARQUET_ROWS`). Where the
catalog's largest setting needs more, the limits rise to what a full file of
it needs in the most verbose format (JSON rows with the longest ids and the
longest float text); otherwise they stay as configured. They remain bounds
checked before parsing: the body (413), the rows of a CSV (its line ends),
a JSON (its opening braces) or a Parquet file (its footer), so a hostile
upload costs at most what a genuine full file of the largest setting costs.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from functools import lru_cache

from leaderboard.errors import InputError
from service import defaults
from service.catalog import DataUnavailable

log = logging.getLogger(__name__)

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


FLOOR_BODY_BYTES = defaults.MAX_UPLOAD_BYTES
"""Below this need the configured body limit holds as it is (the benchmark's settings need ~1 MB)."""

FLOOR_ROWS = 1_000_000
"""Below this need the fixed row limit of `service.uploads` holds as it is."""

FLOOR_DECODED_BYTES = 256 * 1024 * 1024
"""Below this need the fixed decoded-size limit of a Parquet upload holds as it is."""


@dataclass(frozen=True)
class UploadLimits:
    """What a full scores file of the catalog's largest setting needs, where that is above the floors.

    body_bytes: request body; rows: data rows of a file of any format;
    decoded_bytes: what a Parquet file decodes to. None where the floor
    (`FLOOR_BODY_BYTES`, `FLOOR_ROWS`, `FLOOR_DECODED_BYTES`) already admits
    it, so that the configured or fixed limit applies unchanged.
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


def catalog_limits(catalog) -> UploadLimits:
    """The needs of the catalog's largest setting, where they exceed the floors.

    Reads each setting's ids through `catalog.pair_ids` (a directory catalog
    reads its experiences and scenes files only, not the outcomes). A
    setting whose data is not available or not readable here is skipped: it
    cannot take uploads either. Cached per catalog object once computed. A
    catalog that cannot even list its settings (a missing directory, a
    damaged `setting.json`) gives the floors and nothing is cached, so the
    next call reads it again: its requests fail on their own, the app must
    still start to answer them, and the limits rise once it is readable.
    """
    try:
        return _catalog_limits(catalog)
    except CATALOG_ERRORS as exc:  # keep the floors, the safe side; retried on the next call
        log.warning("upload limits: the catalog's settings cannot be read (%s); fixed limits apply",
                    type(exc).__name__)
        return UploadLimits()


CATALOG_ERRORS = (OSError, ValueError, LookupError, InputError)
"""What reading a catalog's settings raises when its files are missing or damaged (I/O,
JSON and table errors, a missing key; `DataUnavailable` is a `LookupError`)."""


class BodyLimit:
    """The request body limit of a web process, read per request: the configured limit,
    raised to what a full file of the catalog's largest setting needs.

    Computed once the catalog is readable (then cached by `catalog_limits`); while it is
    not, the configured limit holds and each call tries again, so a catalog that was
    unreadable when the process started does not pin the floor for the process's life.
    """

    def __init__(self, catalog, configured: int) -> None:
        self.catalog = catalog
        self.configured = configured

    def __call__(self) -> int:
        return catalog_limits(self.catalog).body_limit(self.configured)


@lru_cache(maxsize=8)
def _catalog_limits(catalog) -> UploadLimits:
    body, rows, decoded = 0, 0, 0
    for summary in catalog.list_settings():
        try:
            experience_ids, scene_ids = catalog.pair_ids(summary.id)
        except (DataUnavailable, InputError) as exc:
            log.info("upload limits: setting %s skipped (%s)", summary.id, type(exc).__name__)
            continue
        need = full_file_needs(summary.id, experience_ids, scene_ids)
        body, rows = max(body, need.body_bytes), max(rows, need.rows)
        decoded = max(decoded, need.decoded_bytes)
    return UploadLimits(body_bytes=body if body > FLOOR_BODY_BYTES else None,
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
