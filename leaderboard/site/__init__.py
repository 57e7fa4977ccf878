"""What people read: the published leaderboard site, the HTML report and the terminal summary.

Pure functions of audit report dicts (`AuditReport.to_dict()`): `standings`
decides where each row stands, `views` lays out a setting and the
cross-setting summary, `build` writes the static site, `html_report` and
`sealed_html` render one report, `report_text` prints one on a terminal.
"""

from leaderboard.site.html_report import render_report_html
from leaderboard.site.build import build_leaderboard
from leaderboard.site.report_text import render_summary

__all__ = ["build_leaderboard", "render_report_html", "render_summary"]
