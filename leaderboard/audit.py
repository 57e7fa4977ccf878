"""`run_audit`: every AUDIT_SPEC metric of one rule on one transfer matrix, as one report.

The report is a frozen object; `AuditReport.to_dict()` is the JSON document
(its type and JSON form in `leaderboard.report`). Every random draw comes from `seed`: the same
inputs and seed give the same numbers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.metrics import defaults
from leaderboard.metrics.defaults import SELECTION_ONLY_DIAGNOSTIC_REASON, SELECTION_ONLY_REASON
from leaderboard.matrix import IncompleteOutcomes, TransferData
from leaderboard.metrics.bootstrap import BootstrapResult, Interval, bootstrap_intervals
from leaderboard.metrics.concentration import concentration
from leaderboard.metrics.diagnostics import (
    RandomSubLibraries,
    SubLibraryAdvantage,
    delete_top_pick,
    equalized_library,
    random_sublibraries,
    reranked,
)
from leaderboard.metrics.gap import discrimination_gap, subset_masks
from leaderboard.metrics.noise import noise_aware
from leaderboard.metrics.ranking import r2_scene, ranking_metrics
from leaderboard.metrics.reference import reference_quantities
from leaderboard.metrics.selection import select
from leaderboard.report import AuditInputs, AuditReport, Diagnostics
from leaderboard.verdict import verdict

__all__ = [
    "SELECTION_ONLY_DIAGNOSTIC_REASON",  # re-exported: callers read the reasons beside run_audit
    "SELECTION_ONLY_REASON",
    "AuditInputs",
    "AuditReport",
    "Diagnostics",
    "run_audit",
]


def _check_arguments(
    data: TransferData, scores: np.ndarray, n_shuffles: int, n_bootstrap: int, seed: int
) -> np.ndarray:
    """Validate the arguments of `run_audit`; returns scores as float64."""
    if not data.is_complete:
        raise IncompleteOutcomes(f"data: the outcome tensor has {data.n_missing} missing cells; "
                                 "the audit needs all")
    expected = data.outcomes.shape[:2]
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != expected:
        raise BadArgument(f"scores: shape {scores.shape} does not match (K, Q) = {expected}")
    if not np.isfinite(scores).all():
        raise BadArgument(f"scores: {int((~np.isfinite(scores)).sum())} entries are NaN or infinite")
    for name, value in (("n_shuffles", n_shuffles), ("n_bootstrap", n_bootstrap)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise BadArgument(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise BadArgument(f"seed must be a non-negative integer, got {seed!r}")
    return scores


def _gaps(data: TransferData, y: np.ndarray, sel: np.ndarray, n_shuffles: int, rngs: list) -> tuple:
    """Gap on all scenes and on the appearance / layout subsets, each with its own stream."""
    masks = subset_masks(np.asarray(data.scenes.layout_level), np.asarray(data.scenes.appearance_draw))
    return tuple(
        (name, discrimination_gap(y[:, mask], sel[mask], n_shuffles, rng))
        for (name, mask), rng in zip(masks.items(), rngs)
    )


def _diagnostics(y, scores, selection_only, top_pick, quality, rng) -> Diagnostics:
    """Run the label-using diagnostics, or record why they are not computable."""
    if selection_only:
        missing = SubLibraryAdvantage(None, SELECTION_ONLY_DIAGNOSTIC_REASON)
        return Diagnostics(
            delete_top_pick=missing,
            equalized_library=missing,
            random_sublibraries=RandomSubLibraries(
                None, SELECTION_ONLY_DIAGNOSTIC_REASON, defaults.SUBLIBRARY_DRAWS, defaults.SUBLIBRARY_SIZE
            ),
            reranking=(("csls", missing), ("mutual_proximity", missing)),
        )
    return Diagnostics(
        delete_top_pick=delete_top_pick(y, scores, top_pick),
        equalized_library=equalized_library(y, scores, quality),
        random_sublibraries=random_sublibraries(y, scores, rng),
        reranking=tuple(reranked(y, scores).items()),
    )


def run_audit(
    data: TransferData,
    scores: np.ndarray,
    *,
    selection_only: bool = False,
    n_shuffles: int = defaults.N_SHUFFLES,
    n_bootstrap: int = defaults.N_BOOTSTRAP,
    seed: int = defaults.SEED,
) -> AuditReport:
    """Audit the rule given by `scores` (K, Q) on `data` (AUDIT_SPEC, all sections).

    Parameters
    ----------
    data : complete transfer data (no MISSING cells).
    scores : (K, Q) finite scores, higher = preferred; for selection-only
        input 1 for the pick and 0 elsewhere.
    selection_only : the rule named one experience per scene; ranking metrics
        and score-based diagnostics are then reported as not computable.
    n_shuffles, n_bootstrap : number of frequency-matched shuffles and
        cluster-bootstrap resamples.
    seed : seeds every random draw; independent streams are spawned for the
        three gaps, the bootstrap, the random sub-libraries and the noise null,
        so changing one count never changes another part's draws.
    """
    scores = _check_arguments(data, scores, n_shuffles, n_bootstrap, seed)
    y = data.success_matrix()
    sel = select(scores)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)]
    reference = reference_quantities(y, sel)
    noise = (noise_aware(data.outcomes, defaults.N_NOISE_NULL, streams[5])
             if data.outcomes.shape[2] >= 2 else None)
    conc = concentration(y, sel, reference.margin, reference.advantage)
    gaps = _gaps(data, y, sel, n_shuffles, streams[:3])
    ranking = None if selection_only else ranking_metrics(y, scores)
    intervals = bootstrap_intervals(
        y,
        sel,
        np.asarray(data.scenes.state_ids),
        gaps[0][1].scene_shuffle_mean,
        None if ranking is None else ranking.scene_auroc,
        n_bootstrap,
        streams[3],
        scene_oracle_cf=None if noise is None else noise.scene_oracle_cf,
    )
    if reference.advantage is None:
        intervals = _replace_advantage(intervals, reference.advantage_reason)
    r2, r2_reason = r2_scene(y)
    all_gap = gaps[0][1]
    return AuditReport(
        inputs=AuditInputs(
            experience_ids=tuple(data.experience_ids),
            scene_ids=tuple(data.scenes.scene_ids),
            n_seeds=int(data.outcomes.shape[2]),
            selection_only=bool(selection_only),
            seed=int(seed),
            n_shuffles=int(n_shuffles),
            n_bootstrap=int(n_bootstrap),
        ),
        selection=sel,
        reference=reference,
        noise=noise,
        concentration=conc,
        gaps=gaps,
        intervals=intervals,
        ranking=ranking,
        r2_scene=r2,
        r2_scene_reason=r2_reason,
        diagnostics=_diagnostics(y, scores, selection_only, conc.top_pick, reference.quality, streams[4]),
        verdict=verdict(
            conc.concentration_ratio,
            reference.success_rule,
            reference.success_best_fixed,
            all_gap.direction,
            gap_computed=all_gap.gap is not None,
        ),
    )


def _replace_advantage(intervals: BootstrapResult, reason: str | None) -> BootstrapResult:
    """The advantage interval is null whenever the point advantage is null."""
    return replace(intervals, advantage=Interval(None, None, f"advantage is null: {reason}"))
