"""Upload limits derived from the settings' sizes: a full scores file of the largest setting fits.

A scores file has one row per (experience, scene) pair, so a setting of
K x Q pairs needs K x Q rows: a lab serving a K = 1,000 x 2,000-scene matrix
needs 2,000,000 rows (about 190 MB as JSON, 60 MB as CSV), over the fixed
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
from dataclasses import dataclass
from functools import lru_cache

from service import defaults

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
    cannot take uploads either. Cached per catalog object: the web app computes it once
    at start, the worker at its first upload. A catalog that cannot even
    list its settings gives the floors (nothing cached): its requests fail
    on their own, and the app must still start to answer them.
    """
    try:
        return _catalog_limits(catalog)
    except Exception as exc:  # noqa: BLE001 (any catalog failure: keep the floors, the safe side)
        log.warning("upload limits: the catalog's settings cannot be read (%s); fixed limits apply",
                    type(exc).__name__)
        return UploadLimits()


@lru_cache(maxsize=8)
def _catalog_limits(catalog) -> UploadLimits:
    from leaderboard.errors import InputError
    from service.catalog import DataUnavailable

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
    them). JSON: opening braces less one (every row is an object; one more
    may wrap the list). Parquet reports its own count in its footer.
    """
    if fmt == "csv":
        breaks = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        return breaks + (0 if data.endswith((b"\n", b"\r")) else 1) - 1
    return data.count(b"{") - 1
