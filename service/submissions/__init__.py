"""Submissions: their records (manifest, status, reports), the create request's fields and
limits, and publishing the leaderboard.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".publishing": ("AuditOptions", "DIRTY_KEY", "LEADERBOARD_PREFIX", "PUBLISHED_MANIFEST_KEY",
                    "content_type", "rebuild_leaderboard", "sealed_setting_ids", "setting_infos",
                    "submission_entries", "write_site"),
    ".limits": ("BodyLimit", "catalog_limits"),
    ".records": ("Fault", "Manifest", "PUBLIC_MEMORY_S", "READOUT_KINDS", "RecordCache", "State",
                 "Status", "SubmissionRepo", "new_submission_id", "utc_now"),
    ".form_fields": ("request_fields",),
    ".site_assets": ("setting_thumbnails",),
    ".report_pages": ("submission_context",),
})
