"""Reference rules as leaderboard rows, audited through the same path as submissions.

A baseline is a submission by the benchmark itself: `baseline_scores` gives
the score matrix of every reference rule that has one (`leaderboard.rules`),
and `audit_baselines` runs each through `run_audit` with the same settings a
submission gets. The `random` rule is an expected value with no score matrix
(`leaderboard.rules.random_row`); its report is assembled from that expected
value and the library's reference block, with every quantity that needs an
actual selection (gap, intervals, ranking, diagnostics) null with a reason.
"""

from __future__ import annotations

import copy

import numpy as np

from leaderboard import defaults
from leaderboard.audit import run_audit
from leaderboard.matrix import TransferData
from leaderboard.report_dict import num
from leaderboard.rules import REFERENCE_RULES, RandomRow, random_row

BASELINE_RULES = ("random", "oracle", "best_fixed", "recency", "track_record")
"""Reference rules published on every complete setting, in table order."""

DISPLAY_NAMES = {
    "random": "random (expected value)",
    "oracle": "oracle (hindsight)",
    "best_fixed": "best-fixed (hindsight)",
    "recency": "recency (newest experience)",
    "track_record": "track record (Laplace-smoothed)",
}
"""How each reference rule is called on the leaderboard."""

RANDOM_LABEL = "expected value"
"""Verdict label of the random row: it is a reference point, not a rule to read."""

RANDOM_REASON = (
    "random is an expected value over uniformly random choices: no selection is drawn, "
    "so there is nothing to shuffle, resample or rank"
)
"""Why the random row has no gap, interval, ranking or diagnostic."""


LIBRARY_INTERVALS = ("success_best_fixed",)
"""Intervals that depend on the data only, so the random row keeps them."""


def baseline_submission_id(setting_id: str, rule: str) -> str:
    """The published id of a reference rule's row: unique per (setting, rule), store-key safe."""
    if rule not in BASELINE_RULES:
        raise ValueError(f"rule must be one of {BASELINE_RULES}, got {rule!r}")
    return f"baseline-{rule.replace('_', '-')}-{setting_id}"


def baseline_scores(data: TransferData) -> dict[str, tuple[np.ndarray, bool]]:
    """Score matrix (K, Q) and the `selection_only` flag of every rule that has one.

    `random` is absent by design: it is an expected value, not a draw (see
    `audit_baselines`). Requires a complete outcome tensor (the hindsight
    rules read outcomes).
    """
    if not data.is_complete:
        raise ValueError(f"data: the outcome tensor has {data.n_missing} missing cells; "
                         "reference rules need a complete tensor")
    return {name: (rule.scores(data), rule.selection_only)
            for name, rule in REFERENCE_RULES.items()}


def audit_baselines(
    data: TransferData,
    *,
    seed: int = defaults.SEED,
    n_shuffles: int = defaults.N_SHUFFLES,
    n_bootstrap: int = defaults.N_BOOTSTRAP,
) -> dict[str, dict]:
    """Audit every reference rule on `data`; returns rule name -> report dict.

    The rules with a score matrix go through `run_audit` exactly as a
    submission would (same seed and counts). The random row reuses the
    library-level blocks of the best-fixed report (they depend on the data,
    not the rule) and fills the rule-level ones from `random_row`.
    """
    reports = {}
    for name, (scores, selection_only) in baseline_scores(data).items():
        report = run_audit(data, scores, selection_only=selection_only,
                           n_shuffles=n_shuffles, n_bootstrap=n_bootstrap, seed=seed)
        reports[name] = report.to_dict()
    reports["random"] = random_report(random_row(data), reports["best_fixed"])
    return {name: reports[name] for name in BASELINE_RULES}


def _null_interval() -> dict:
    return {"low": None, "high": None, "reason": RANDOM_REASON, "n_undefined": None}


def _null_gap(template: dict) -> dict:
    return {"gap": None, "shuffle_mean": None, "gap_envelope": None, "gap_significant": None,
            "direction": None, "n_scenes": template.get("n_scenes"), "reason": RANDOM_REASON}


def _null_diagnostics(template: dict) -> dict:
    """Every diagnostic of the template with its numbers removed and the reason set."""
    def clear(block: dict) -> dict:
        out = {key: None for key in block}
        for kept in ("n_draws", "size", "k", "removed"):
            if kept in block:
                out[kept] = block[kept]
        out["reason"] = RANDOM_REASON
        return out

    result = {name: clear(block) for name, block in template.items() if name != "reranking"}
    result["reranking"] = {name: clear(block)
                           for name, block in template.get("reranking", {}).items()}
    if "delete_top_pick" in result:
        result["delete_top_pick"]["removed"] = None
    return result


def random_report(row: RandomRow, library_report: dict) -> dict:
    """The report dict of the expected-value random rule.

    Args:
        row: the expected value from `leaderboard.rules.random_row`.
        library_report: any audited report on the same data (for the blocks
            that describe the library, not the rule: success_random,
            success_oracle, best-fixed, quality, margin, r2_scene).

    Returns:
        A report dict with the audit's schema: rule-level numbers from `row`,
        quantities that need a drawn selection null with `RANDOM_REASON`.
    """
    report = copy.deepcopy(library_report)
    n_experiences = report["inputs"]["n_experiences"]
    report["inputs"]["selection_only"] = True
    report["inputs"]["rule"] = "random"
    report["reference"].update(success_rule=num(row.success_rule), advantage=num(row.advantage),
                               advantage_reason=row.advantage_reason)
    experience_ids = report["inputs"]["experience_ids"]
    report["concentration"].update(
        selection_counts={e: num(row.expected_selection_count) for e in experience_ids},
        # every expected count ties, and ties go to the lowest library index
        top_pick=experience_ids[0], top_pick_share=num(row.top_pick_share),
        concentration_ratio=num(row.concentration_ratio), top_pick_margin=None,
        sign_match=None,
        reason=f"expected counts: every experience is chosen in 1/{n_experiences} of scenes",
    )
    report["gap"] = {name: _null_gap(block) for name, block in report["gap"].items()}
    # best-fixed's interval describes the library, not the rule: it is kept
    report["intervals"] = {name: block if name in LIBRARY_INTERVALS else _null_interval()
                           for name, block in report["intervals"].items()}
    ranking = report["ranking"]
    for key in ("pooled_auroc", "within_query_auroc", "within_query_eligible_share"):
        ranking[key] = None
    ranking.update(pooled_auroc_reason=RANDOM_REASON, within_query_auroc_reason=RANDOM_REASON,
                   not_computable_reason=RANDOM_REASON)
    report["diagnostics"] = _null_diagnostics(report["diagnostics"])
    report["verdict"] = {"label": RANDOM_LABEL, "text": (
        f"Reference point: the mean success over all experience-scene pairs "
        f"({num(row.success_rule):.3f}); its A is 0 by definition whenever A is defined.")}
    report["selection"] = None
    return report
