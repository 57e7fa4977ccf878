"""The audit report: its frozen result object and its one JSON form.

`AuditReport` is what `leaderboard.audit.run_audit` returns; `report_to_dict`
(also `AuditReport.to_dict()`) is its JSON document, schema
`defaults.SCHEMA_VERSION`. Grouping: inputs, reference, noise, concentration, gap,
intervals, ranking, diagnostics, verdict. Floats are rounded to
`defaults.ROUND_DIGITS` decimals (and -0.0 written as 0.0), NaN becomes null,
so `json.dumps(sort_keys=True)` of the same inputs and seed is byte-identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from leaderboard.metrics import defaults
from leaderboard.metrics.bootstrap import BootstrapResult, Interval
from leaderboard.metrics.concentration import ConcentrationResult
from leaderboard.metrics.defaults import SELECTION_ONLY_REASON
from leaderboard.metrics.diagnostics import RandomSubLibraries, SubLibraryAdvantage
from leaderboard.metrics.discrimination import MIN_GAP, RANDOM_RANGE, noise_shortfall, shortfall
from leaderboard.metrics.gap import GapResult
from leaderboard.metrics.noise import NoiseResult
from leaderboard.metrics.ranking import RankingResult
from leaderboard.metrics.reference import ReferenceResult
from leaderboard.verdict import Verdict


@dataclass(frozen=True)
class AuditInputs:
    """What the report was computed from (echoed into the JSON `inputs` block)."""

    experience_ids: tuple[str, ...]
    scene_ids: tuple[str, ...]
    n_seeds: int
    selection_only: bool
    seed: int
    n_shuffles: int
    n_bootstrap: int


@dataclass(frozen=True)
class Diagnostics:
    """Label-using diagnostics (AUDIT_SPEC); `reranking` is keyed csls / mutual_proximity."""

    delete_top_pick: SubLibraryAdvantage
    equalized_library: SubLibraryAdvantage
    random_sublibraries: RandomSubLibraries
    reranking: tuple[tuple[str, SubLibraryAdvantage], ...]


@dataclass(frozen=True)
class AuditReport:
    """The full audit of one rule; `to_dict()` gives the JSON document.

    `gaps` pairs each subset name (all, appearance, layout) with its result;
    `noise` is None on a single-seed tensor; `ranking` is None for selection-only input; `selection` is the (Q,)
    selected library index per scene.
    """

    inputs: AuditInputs
    selection: np.ndarray
    reference: ReferenceResult
    noise: NoiseResult | None
    concentration: ConcentrationResult
    gaps: tuple[tuple[str, GapResult], ...]
    intervals: BootstrapResult
    ranking: RankingResult | None
    r2_scene: float | None
    r2_scene_reason: str | None
    diagnostics: Diagnostics
    verdict: Verdict

    def to_dict(self) -> dict:
        """JSON-serialisable report with `schema_version`; floats rounded for byte stability."""
        return report_to_dict(self)



def num(value) -> float | None:
    """A float rounded for the report; None for None or NaN."""
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return None
    return round(value, defaults.ROUND_DIGITS) + 0.0


def _by_id(ids: tuple[str, ...], values: np.ndarray, cast=num) -> dict:
    return {experience: cast(v) for experience, v in zip(ids, values)}


def _interval(interval: Interval) -> dict:
    return {
        "low": num(interval.low),
        "high": num(interval.high),
        "reason": interval.reason,
        "n_undefined": interval.n_undefined,
    }


def _gap(result: GapResult) -> dict:
    envelope = None
    if result.envelope_low is not None:
        envelope = [num(result.envelope_low), num(result.envelope_high)]
    return {
        "gap": num(result.gap),
        "shuffle_mean": num(result.shuffle_mean),
        "gap_envelope": envelope,
        "gap_significant": result.significant,
        "direction": result.direction,
        "n_scenes": result.n_scenes,
        "reason": result.reason,
    }


def _sub_library(result: SubLibraryAdvantage, ids: tuple[str, ...]) -> dict:
    kept = None if result.experiences is None else [ids[i] for i in result.experiences]
    return {
        "advantage": num(result.value),
        "reason": result.reason,
        "experience_ids": kept,
        "quality_range": num(result.quality_range),
    }


def _reference(report: AuditReport, ids: tuple[str, ...]) -> dict:
    ref = report.reference
    return {
        "success_rule": num(ref.success_rule),
        "success_random": num(ref.success_random),
        "success_oracle": num(ref.success_oracle),
        "best_fixed": ids[ref.best_fixed],
        "success_best_fixed": num(ref.success_best_fixed),
        "headroom": num(ref.headroom),
        "advantage": num(ref.advantage),
        "advantage_reason": ref.advantage_reason,
        "advantage_min_denominator": defaults.ADVANTAGE_MIN_DENOMINATOR,
        "best_fixed_advantage": num(ref.best_fixed_advantage),
        "quality": _by_id(ids, ref.quality),
        "margin": _by_id(ids, ref.margin),
    }


def _noise(report: AuditReport) -> dict:
    """The noise-aware block: the oracle bracket, headroom_cf, the noise null and both labels.

    The setting's label is the noise-aware rule (`discriminates`, `reason`); the paper's bar is
    beside it under `paper_bar`, never the verdict.
    """
    ref, noise = report.reference, report.noise
    paper_missing = shortfall(ref.success_random, ref.success_oracle)
    paper = {"discriminates": paper_missing is None, "reason": paper_missing,
             "oracle_minus_random": num(ref.success_oracle - ref.success_random),
             "min_gap": MIN_GAP, "random_range": list(RANDOM_RANGE)}
    if noise is None:
        return {"success_oracle_cf": None, "oracle_bracket": None, "headroom_cf": None,
                "null_p95": None, "null_p_value": None, "n_null": 0, "discriminates": None,
                "reason": defaults.NOISE_ONE_SEED_REASON, "paper_bar": paper}
    missing = noise_shortfall(ref.success_random, report.intervals.headroom_cf.low)
    return {
        "success_oracle_cf": num(noise.success_oracle_cf),
        "oracle_bracket": [num(noise.success_oracle_cf), num(ref.success_oracle)],
        "headroom_cf": num(noise.headroom_cf),
        "null_p95": num(noise.null_p95),
        "null_p_value": num(noise.null_p_value),
        "n_null": noise.n_null,
        "discriminates": missing is None,
        "reason": missing,
        "paper_bar": paper,
    }


def _concentration(report: AuditReport, ids: tuple[str, ...]) -> dict:
    conc = report.concentration
    return {
        "selection_counts": _by_id(ids, conc.selection_counts, int),
        "oracle_counts": _by_id(ids, conc.oracle_counts),
        "top_pick": ids[conc.top_pick],
        "top_pick_share": num(conc.top_pick_share),
        "oracle_top_pick_share": num(conc.oracle_top_pick_share),
        "concentration_ratio": num(conc.concentration_ratio),
        "top_pick_margin": num(conc.top_pick_margin),
        "sign_match": conc.sign_match,
    }


def _ranking(report: AuditReport) -> dict:
    rank = report.ranking
    common = {"r2_scene": num(report.r2_scene), "r2_scene_reason": report.r2_scene_reason}
    if rank is None:
        return {
            "pooled_auroc": None,
            "pooled_auroc_reason": SELECTION_ONLY_REASON,
            "within_query_auroc": None,
            "within_query_auroc_reason": SELECTION_ONLY_REASON,
            "within_query_eligible_share": None,
            "not_computable_reason": SELECTION_ONLY_REASON,
            **common,
        }
    return {
        "pooled_auroc": num(rank.pooled_auroc),
        "pooled_auroc_reason": rank.pooled_reason,
        "within_query_auroc": num(rank.within_query_auroc),
        "within_query_auroc_reason": rank.within_query_reason,
        "within_query_eligible_share": num(rank.within_query_eligible_share),
        "not_computable_reason": None,
        **common,
    }


def _diagnostics(report: AuditReport, ids: tuple[str, ...]) -> dict:
    diag = report.diagnostics
    subs = diag.random_sublibraries
    delete = _sub_library(diag.delete_top_pick, ids)
    delete.pop("experience_ids")  # every experience but `removed`
    delete["removed"] = ids[report.concentration.top_pick]
    delete["advantage_before"] = num(report.reference.advantage)
    equalized = _sub_library(diag.equalized_library, ids)
    equalized["size"] = min(len(ids), defaults.EQUALIZED_LIBRARY_SIZE)
    reranking = {name: _sub_library(result, ids) for name, result in diag.reranking}
    reranking["csls"]["k"] = defaults.CSLS_K
    return {
        "delete_top_pick": delete,
        "equalized_library": equalized,
        "random_sublibraries": {
            "share_exceeding_oracle": num(subs.share_exceeding_oracle),
            "mean_concentration_ratio": num(subs.mean_concentration_ratio),
            "n_draws": subs.n_draws,
            "size": subs.size,
            "reason": subs.reason,
        },
        "reranking": reranking,
    }


def report_to_dict(report: AuditReport) -> dict:
    """The JSON document of `report` (see the module docstring for the layout)."""
    inputs = report.inputs
    ids = inputs.experience_ids
    intervals = report.intervals
    return {
        "schema_version": defaults.SCHEMA_VERSION,
        "inputs": {
            "n_experiences": len(ids),
            "n_scenes": len(inputs.scene_ids),
            "n_seeds": inputs.n_seeds,
            "n_states": intervals.n_clusters,
            "experience_ids": list(ids),
            "selection_only": inputs.selection_only,
            "seed": inputs.seed,
            "n_shuffles": inputs.n_shuffles,
            "n_bootstrap": inputs.n_bootstrap,
        },
        "reference": _reference(report, ids),
        "noise": _noise(report),
        "concentration": _concentration(report, ids),
        "gap": {name: _gap(result) for name, result in report.gaps},
        "intervals": {
            name: _interval(getattr(intervals, name))
            for name in ("success_rule", "advantage", "success_best_fixed", "gap", "within_query_auroc",
                         "headroom_cf")
        },
        "ranking": _ranking(report),
        "diagnostics": _diagnostics(report, ids),
        "verdict": {"label": report.verdict.label, "text": report.verdict.text},
        "selection": {scene: ids[i] for scene, i in zip(inputs.scene_ids, report.selection)},
    }
