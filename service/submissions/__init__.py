"""Submissions: their records (manifest, status, reports), the create request's fields and
limits, and publishing the leaderboard.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "AuditOptions": "service.submissions.publishing",
    "BodyLimit": "service.submissions.limits",
    "DIRTY_KEY": "service.submissions.publishing",
    "Fault": "service.submissions.records",
    "LEADERBOARD_PREFIX": "service.submissions.publishing",
    "Manifest": "service.submissions.records",
    "PUBLISHED_MANIFEST_KEY": "service.submissions.publishing",
    "RecordCache": "service.submissions.records",
    "State": "service.submissions.records",
    "Status": "service.submissions.records",
    "SubmissionRepo": "service.submissions.records",
    "catalog_limits": "service.submissions.limits",
    "content_type": "service.submissions.publishing",
    "new_submission_id": "service.submissions.records",
    "rebuild_leaderboard": "service.submissions.publishing",
    "request_fields": "service.submissions.form_fields",
    "sealed_setting_ids": "service.submissions.publishing",
    "setting_infos": "service.submissions.publishing",
    "setting_thumbnails": "service.submissions.site_assets",
    "submission_context": "service.submissions.report_pages",
    "submission_entries": "service.submissions.publishing",
    "utc_now": "service.submissions.records",
    "write_site": "service.submissions.publishing",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.submissions' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
