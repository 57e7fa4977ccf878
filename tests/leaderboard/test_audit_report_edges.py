"""Published report fields at the edges the metric tests left open (found by mutation testing).

Each test reads `run_audit(...).to_dict()`, the published document, so it
holds for any implementation of the metrics: experiences never selected,
diagnostics that keep the whole library, null reasons, subsets of one and
two scenes, and the equalized library's two search regimes (exhaustive up to
K = 10, a stably sorted sliding window above).
"""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.metrics import defaults
from leaderboard.audit import run_audit


def _report(data, scores, **kwargs) -> dict:
    return run_audit(data, np.asarray(scores, dtype=float), n_shuffles=50, n_bootstrap=50, **kwargs).to_dict()


def _scores_picking(pick, k: int) -> np.ndarray:
    """Scores (K, Q) whose selection is `pick[q]` in every scene."""
    scores = np.zeros((k, len(pick)))
    scores[np.asarray(pick), np.arange(len(pick))] = 1.0
    return scores


def test_selection_counts_name_every_experience_even_never_selected(audit_random_setting):
    data, _ = audit_random_setting
    k, q = data.outcomes.shape[:2]
    report = _report(data, _scores_picking(np.arange(q) % 2, k))  # only e0 and e1 are picked
    counts = report["concentration"]["selection_counts"]
    assert list(counts) == list(data.experience_ids)
    assert counts["e0"] + counts["e1"] == q and all(counts[e] == 0 for e in data.experience_ids[2:])
    assert list(report["concentration"]["oracle_counts"]) == list(data.experience_ids)


def test_reranking_keeps_the_whole_library(audit_random_setting):
    data, scores = audit_random_setting
    reranking = _report(data, scores)["diagnostics"]["reranking"]
    for name in ("csls", "mutual_proximity"):
        assert reranking[name]["experience_ids"] is None and reranking[name]["quality_range"] is None


def test_a_null_advantage_names_its_reason_in_the_reference_and_the_interval(audit_data_factory):
    outcomes = np.zeros((2, 25, 1), dtype=np.int8)
    outcomes[0, 0] = 1  # e0 succeeds on 1 of 25 scenes: oracle - random = 0.02
    data = audit_data_factory(outcomes)
    report = _report(data, _scores_picking(np.zeros(25, dtype=int), 2))
    reason = ("oracle - random = 0.0200 is below 0.05: the library leaves too little room between "
              "random and oracle selection")
    assert report["reference"]["advantage"] is None
    assert report["reference"]["advantage_reason"] == reason
    assert report["intervals"]["advantage"]["reason"] == f"advantage is null: {reason}"


def test_random_sublibraries_below_k50_name_what_would_be_drawn(audit_random_setting):
    data, scores = audit_random_setting
    subs = _report(data, scores)["diagnostics"]["random_sublibraries"]
    assert subs["share_exceeding_oracle"] is None
    assert (subs["n_draws"], subs["size"]) == (defaults.SUBLIBRARY_DRAWS, defaults.SUBLIBRARY_SIZE)
    assert subs["reason"].startswith("not applicable: the library has K = 12 experiences")


def test_deleting_the_top_pick_of_two_leaves_one_experience_to_re_select(audit_data_factory):
    outcomes = np.array([[1, 1, 0, 1], [0, 1, 1, 0]], dtype=np.int8)
    report = _report(audit_data_factory(outcomes), _scores_picking([0, 0, 0, 0], 2))
    delete = report["diagnostics"]["delete_top_pick"]
    assert delete["removed"] == "e0" and delete["advantage"] is None
    assert delete["reason"].startswith("oracle - random = 0.0000 is below 0.05")


def test_gap_subsets_of_two_scenes_are_shuffled_and_of_one_are_not(audit_data_factory):
    # layout 0 (appearance subset): scenes 0, 1; draw 0 with layout >= 1 (layout subset): scene 2
    layout, draws = [0, 0, 1, 1, 2], [0, 1, 0, 1, 1]
    outcomes = np.array([[1, 0, 1, 0, 1], [0, 1, 0, 1, 0]], dtype=np.int8)
    report = _report(audit_data_factory(outcomes, layout=layout, draws=draws), _scores_picking([0] * 5, 2))
    appearance, layout_gap = report["gap"]["appearance"], report["gap"]["layout"]
    assert appearance["n_scenes"] == 2 and appearance["gap"] == pytest.approx(0.0)  # one pick: no change
    assert appearance["reason"] is None and appearance["gap_envelope"] is not None
    assert layout_gap["n_scenes"] == 1 and layout_gap["gap"] is None
    assert layout_gap["reason"] == "1 scene(s) in this subset: a shuffle needs at least 2"


def _library_of_qualities(audit_data_factory, qualities):
    """K experiences over 10 scenes, experience i succeeding on round(10 q_i) of them."""
    hits = np.round(np.asarray(qualities) * 10).astype(int)
    outcomes = (np.arange(10)[None, :] < hits[:, None]).astype(np.int8)
    return audit_data_factory(outcomes)


@pytest.mark.parametrize("qualities,expected", [
    ([0.9] * 5 + [0.1] * 5, ["e0", "e1", "e2", "e3", "e4"]),  # K = 10: exhaustive, first subset
    ([0.9] * 5 + [0.1] * 5 + [0.5], ["e5", "e6", "e7", "e8", "e9"]),  # K = 11: first sorted window
    ([0.5] * 10 + [0.2] * 10, ["e10", "e11", "e12", "e13", "e14"]),  # ties keep library order
])
def test_equalized_library_search(audit_data_factory, qualities, expected):
    data = _library_of_qualities(audit_data_factory, qualities)
    k, q = data.outcomes.shape[:2]
    equalized = _report(data, _scores_picking(np.zeros(q, dtype=int), k))["diagnostics"]["equalized_library"]
    assert sorted(equalized["experience_ids"], key=lambda e: int(e[1:])) == expected
    assert equalized["quality_range"] == 0.0


def test_the_within_query_auroc_interval_is_published_around_its_value(audit_random_setting):
    data, scores = audit_random_setting
    report = _report(data, scores)
    within, interval = report["ranking"]["within_query_auroc"], report["intervals"]["within_query_auroc"]
    assert within is not None and interval["reason"] is None
    assert interval["low"] <= within <= interval["high"] and interval["low"] < interval["high"]
