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

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".audit": ("AuditReport", "run_audit"),
    ".errors": ("InputError",),
    ".scores": ("ScoresInput", "parse_scores_table", "read_inputs"),
    ".matrix": ("MISSING", "SceneTable", "TransferData"),
    ".report": ("report_to_dict",),
    ".verdict": ("Verdict", "verdict"),
})
