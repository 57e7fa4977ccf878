"""The upload limits of this service: the reader's limits raised to the catalog's largest setting.

`leaderboard.scores.limits` says what a full scores file of one setting
needs; here the catalog's settings are read (their ids only) and the
largest need, where it is above the configured body limit and the reader's
fixed limits, becomes the limit of every upload (the body, 413; the rows
and decoded bytes the reader checks before parsing).
"""

from __future__ import annotations

import logging
from functools import lru_cache

from leaderboard.errors import InputError
from leaderboard.scores import UploadLimits, full_file_needs, largest_needs
from service.process import defaults
from service.catalog import DataUnavailable

log = logging.getLogger(__name__)

FLOOR_BODY_BYTES = defaults.MAX_UPLOAD_BYTES
"""Below this need the configured body limit holds as it is (the benchmark's settings need ~1 MB)."""

CATALOG_ERRORS = (OSError, ValueError, LookupError, InputError)
"""What reading a catalog's settings raises when its files are missing or damaged (I/O,
JSON and table errors, a missing key; `DataUnavailable` is a `LookupError`)."""


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
    needs = []
    for summary in catalog.list_settings():
        try:
            experience_ids, scene_ids = catalog.pair_ids(summary.id)
        except (DataUnavailable, InputError) as exc:
            log.info("upload limits: setting %s skipped (%s)", summary.id, type(exc).__name__)
            continue
        needs.append(full_file_needs(summary.id, experience_ids, scene_ids))
    return largest_needs(needs, floor_body_bytes=FLOOR_BODY_BYTES)
