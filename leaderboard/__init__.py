"""The audit engine (AUDIT_SPEC): a transfer matrix and a rule's scores in, an audit report out.

Pure and self-contained: it imports nothing else of the project but its
metrics (`leaderboard.metrics`) and the leaf modules. The reference rules,
the published site and the paper's findings are the subpackages `rules`,
`site` and `findings`, layered above the engine (docs/architecture.md).
"""

from leaderboard.audit import AuditReport, run_audit
from leaderboard.errors import InputError
from leaderboard.io import ScoresInput, parse_scores_table, read_inputs
from leaderboard.matrix import MISSING, SceneTable, TransferData
from leaderboard.report_dict import report_to_dict
from leaderboard.verdict import Verdict, verdict

__all__ = [
    "MISSING", "AuditReport", "InputError", "SceneTable", "ScoresInput", "TransferData",
    "Verdict", "parse_scores_table", "read_inputs", "report_to_dict", "run_audit", "verdict",
]
