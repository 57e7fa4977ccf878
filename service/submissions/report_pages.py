"""The header of a submission's own report page (the API's `?format=html`).

The page a submitter reads before publishing names its setting, rule, submitter
and date like the published one, and links to the public leaderboard by
absolute path (it is served under /api/v1, not beside the site's files).
"""

from __future__ import annotations

from leaderboard.site.html_report import ReportContext
from service.process import defaults
from service.submissions.publishing import LEADERBOARD_PREFIX
from service.submissions.records import Manifest


def submission_context(manifest: Manifest, setting_id: str) -> ReportContext:
    """What the report page of `manifest`'s audit on `setting_id` says about itself."""
    site = "/" + LEADERBOARD_PREFIX
    return ReportContext(
        title=f"{manifest.name} on {setting_id}", setting_id=setting_id, rule=manifest.name,
        submitter=manifest.owner_name or "not given", date=manifest.created_at[:10] or None,
        kind="submission", setting_link=f"{site}settings/{setting_id}.html",
        index_link=f"{site}index.html",
        json_link=(f"{defaults.API_PREFIX}/submissions/{manifest.submission_id}/report"
                   f"?setting={setting_id}"))
