"""The audit engine (AUDIT_SPEC): a transfer matrix and a rule's scores in, an audit report out.

Pure and self-contained: it imports nothing else of the project but its
metrics (`leaderboard.metrics`) and the leaf modules. The reference rules,
the published site and the paper's findings are the subpackages `rules`,
`site` and `findings`, layered above the engine (docs/architecture.md).

The public names below load on first use, so importing a light module of the
package (`leaderboard.metrics.defaults`, `leaderboard.errors`) does not load
pandas and the whole engine.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "AuditReport": "leaderboard.audit", "run_audit": "leaderboard.audit",
    "InputError": "leaderboard.errors",
    "ScoresInput": "leaderboard.scores", "parse_scores_table": "leaderboard.scores",
    "read_inputs": "leaderboard.scores",
    "MISSING": "leaderboard.matrix", "SceneTable": "leaderboard.matrix",
    "TransferData": "leaderboard.matrix",
    "report_to_dict": "leaderboard.report",
    "Verdict": "leaderboard.verdict", "verdict": "leaderboard.verdict",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'leaderboard' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
