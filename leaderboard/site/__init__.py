"""What people read: the published leaderboard site, the HTML report and the terminal summary.

Pure functions of audit report dicts (`AuditReport.to_dict()`): `standings`
decides where each row stands, `views` lays out a setting and the
cross-setting summary, `build` writes the static site, `html_report` and
`sealed_html` render one report, `report_text` prints one on a terminal;
`documents` reads and renders the project's docs and dataset card for the site.
"""

from leaderboard.site.html_report import render_report_html
from leaderboard.site.build import build_leaderboard
from leaderboard.site.documents import Documents, read_documents
from leaderboard.site.report_text import render_summary

__all__ = ["Documents", "build_leaderboard", "read_documents", "render_report_html",
           "render_summary"]
