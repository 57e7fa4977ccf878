"""The paper's headline results, re-measured from the reference rules' stored audit reports.

`store` keeps one audit report per (setting, rule); `measure` computes the
findings from them (pure); `page` writes `docs/findings.md` with the figures
of `figures`; `paper` holds the paper's reported numbers every comparison
reads.
"""

from leaderboard.findings.measure import Findings, compute_findings
from leaderboard.findings.page import render_findings
from leaderboard.findings.store import (BadReportFile, ReportsNotFound, ReportStore, compute_rule_reports,
                                        load_store)

__all__ = ["BadReportFile", "Findings", "ReportStore", "ReportsNotFound", "compute_findings",
           "compute_rule_reports", "load_store", "render_findings"]
