"""Invariances over a registry of deterministic metrics (cf. sklearn's common tests).

Permuting the scene rows (with their scores) or renaming/reordering the
experiences (with their scores) must not change any deterministic metric.
Scores are continuous (no ties), so the lowest-index tie rule never decides.
"""

import numpy as np
import pytest

from leaderboard.metrics.concentration import concentration
from leaderboard.metrics.diagnostics import delete_top_pick, equalized_library, reranked
from leaderboard.metrics.ranking import ranking_metrics, r2_scene
from leaderboard.metrics.reference import reference_quantities
from leaderboard.metrics.selection import select


def _reference(y, s):
    ref = reference_quantities(y, select(s))
    return [
        ref.success_rule,
        ref.success_random,
        ref.success_oracle,
        ref.success_best_fixed,
        ref.headroom,
        ref.advantage,
        ref.best_fixed_advantage,
        sorted(ref.quality),
    ]


def _concentration(y, s):
    ref = reference_quantities(y, select(s))
    conc = concentration(y, select(s), ref.margin, ref.advantage)
    return [
        conc.top_pick_share,
        conc.oracle_top_pick_share,
        conc.concentration_ratio,
        conc.top_pick_margin,
        conc.sign_match,
        sorted(conc.selection_counts),
        sorted(conc.oracle_counts),
    ]


def _ranking(y, s):
    result = ranking_metrics(y, s)
    return [
        result.pooled_auroc,
        result.within_query_auroc,
        result.within_query_eligible_share,
        r2_scene(y)[0],
    ]


def _diagnostics(y, s):
    ref = reference_quantities(y, select(s))
    conc = concentration(y, select(s), ref.margin, ref.advantage)
    return [
        delete_top_pick(y, s, conc.top_pick).value,
        equalized_library(y, s, ref.quality).value,
        reranked(y, s)["csls"].value,
        reranked(y, s)["mutual_proximity"].value,
    ]


def _flat(values):
    """Flatten to floats (None -> NaN) so pytest.approx can compare."""
    out = []
    for value in values:
        if isinstance(value, list):
            out.extend(_flat(value))
        else:
            out.append(float("nan") if value is None else float(value))
    return out


METRICS = {
    "reference": _reference,
    "concentration": _concentration,
    "ranking": _ranking,
    "diagnostics": _diagnostics,
}


@pytest.fixture
def setting():
    rng = np.random.default_rng(12)
    # qualities spaced apart so that the equalized subset and the top pick are unique
    p = np.clip(np.linspace(0.1, 0.9, 14)[:, None] + 0.3 * rng.random((1, 60)) - 0.15, 0, 1)
    y = (rng.random((14, 60, 5)) < p[..., None]).mean(axis=2)
    scores = rng.normal(size=(14, 60))
    scores[3] += 0.8  # a clear top pick
    return y, scores


@pytest.mark.parametrize("name", sorted(METRICS))
def test_permuting_scenes_changes_nothing(setting, name):
    y, scores = setting
    order = np.random.default_rng(1).permutation(y.shape[1])
    expected = _flat(METRICS[name](y, scores))
    assert _flat(METRICS[name](y[:, order], scores[:, order])) == pytest.approx(expected, nan_ok=True)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_permuting_experiences_changes_nothing(setting, name):
    y, scores = setting
    order = np.random.default_rng(2).permutation(y.shape[0])
    expected = _flat(METRICS[name](y, scores))
    assert _flat(METRICS[name](y[order], scores[order])) == pytest.approx(expected, nan_ok=True)


def test_run_audit_keyed_values_follow_experience_ids(audit_data_factory, setting):
    from leaderboard.audit import run_audit

    y, scores = setting
    outcomes = np.repeat((y * 5).round().astype(np.int8)[..., None], 1, axis=2)
    outcomes = (np.arange(5)[None, None, :] < outcomes[..., :1]).astype(np.int8)
    ids = [f"exp-{i}" for i in range(14)]
    order = np.random.default_rng(3).permutation(14)
    first = run_audit(audit_data_factory(outcomes, experience_ids=ids), scores, n_shuffles=20, n_bootstrap=20)
    second = run_audit(
        audit_data_factory(outcomes[order], experience_ids=[ids[i] for i in order]),
        scores[order],
        n_shuffles=20,
        n_bootstrap=20,
    )
    a, b = first.to_dict(), second.to_dict()
    for group, key in (
        ("concentration", "selection_counts"),
        ("concentration", "oracle_counts"),
        ("reference", "quality"),
        ("reference", "margin"),
    ):
        assert a[group][key] == b[group][key]
    assert a["concentration"]["top_pick"] == b["concentration"]["top_pick"]
    assert a["reference"]["best_fixed"] == b["reference"]["best_fixed"]
    assert a["selection"] == b["selection"]
