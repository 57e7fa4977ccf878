"""The first publication of `expaudit serve`: a site in seconds, reference rows in the background.

Computing every reference rule's report on an empty data directory takes
minutes (the embedding rules embed hundreds of images), and the web process
used to wait for it. Now `serve` writes at once a site of the stored
submissions with a notice that the reference rows are being computed, and
enqueues one leaderboard rebuild; the worker computes (and caches) the
reference reports and replaces the site, without the notice. When a site was
published by an earlier run it is kept as it is and refreshed by the same
rebuild.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis as redis_lib

from leaderboard.site.build import build_leaderboard
from leaderboard.site.documents import read_documents
from service.catalog import Catalog
from service.queues import enqueue_publish
from service.submissions import (PUBLISHED_MANIFEST_KEY, sealed_setting_ids, setting_infos, submission_entries, write_site)
from service.submissions import SubmissionRepo, setting_thumbnails
from service.store import ObjectStore

log = logging.getLogger(__name__)

BUILDING_NOTICE = ("The reference rows (random, best-fixed, oracle and the reference rules) are "
                   "being computed in the background; they appear here within minutes.")
"""Shown on every page of the first site until the worker's rebuild replaces it."""


@dataclass(frozen=True)
class FirstPublish:
    """What `publish_first` did: files written now (0 when an earlier site was kept) and
    the id of the enqueued rebuild."""

    files_written: int
    kept_earlier_site: bool
    rebuild_job: str


def publish_first(store: ObjectStore, catalog: Catalog, redis: redis_lib.Redis) -> FirstPublish:
    """Publish a site without computing any reference report, then enqueue the full rebuild."""
    kept = store.exists(PUBLISHED_MANIFEST_KEY)
    written = 0
    if not kept:
        files = build_leaderboard(submission_entries(SubmissionRepo(store),
                                                     sealed=sealed_setting_ids(catalog)),
                                  setting_infos(catalog),
                                  thumbnails=setting_thumbnails(catalog), notice=BUILDING_NOTICE,
                                  documents=read_documents())
        written = write_site(store, files)
    job = enqueue_publish(redis, None)
    log.info("first publication: %s; leaderboard rebuild %s enqueued",
             "earlier site kept" if kept else f"{written} files written", job.id)
    return FirstPublish(written, kept, job.id)
