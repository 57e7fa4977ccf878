"""The paper's numbers have one owner, and every page that shows them reads it."""

from __future__ import annotations

import numpy as np

from benchmark_data.pages import policy_settings, replay_settings
from benchmark_data.pages.setting_figures import summarize
from leaderboard.findings import measure, page, paper
from leaderboard.findings.paper import TABLE_I, TABLE_IV, TableIRow
from leaderboard.metrics.discrimination import discriminates
from leaderboard.metrics.ranking import r2_scene
from leaderboard.metrics.reference import reference_quantities
from leaderboard.metrics.selection import oracle_tie_counts


def test_table_i_rows_as_printed_in_the_paper():
    assert TABLE_I["stack-replay-k3-orig"] == TableIRow(3, 0.58, 0.80, 0.53, 0.110, 0.45)
    assert TABLE_I["stack-replay-k50"] == TableIRow(50, 0.51, 0.83, 0.56, 0.130, 0.10)
    assert TABLE_I["door-policydr-k3-fresh"] == TableIRow(3, 0.40, 0.82, 0.67, 0.092, 0.50)
    assert set(paper.STACK_REPLAY_SETTINGS) <= set(TABLE_I) and set(paper.R2_SCENE) == set(
        paper.STACK_REPLAY_SETTINGS)
    assert [row.group for row in TABLE_IV] == ["Stack Replay, K=3", "Stack Replay, K=10",
                                               "Stack Replay, K=50", "Image policy, K=3"]
    assert TABLE_IV[2].pooled == paper.HEADLINE["pooled_k50"]
    assert TABLE_IV[2].within_query == paper.HEADLINE["within_k50"]


def test_no_page_keeps_its_own_copy_of_the_paper():
    for module in (measure, page, replay_settings, policy_settings):
        names = [name for name in vars(module) if name.startswith("PAPER")]
        assert names in ([], ["PAPER"]), (module.__name__, names)
    assert page.PAPER is paper.HEADLINE


def test_policy_page_shows_the_papers_row_for_door_settings():
    row = TABLE_I["door-policy-k3-orig"]
    text = (f"{row.random:.2f}, {row.oracle:.2f}, {row.best_fixed_advantage:.2f}, {row.headroom:.3f}")
    assert text == "0.64, 0.78, 0.36, 0.088"


def test_the_pages_figures_are_the_engines():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 6, (7, 40)) / 5.0
    s = summarize(y)
    ref = reference_quantities(y, np.zeros(40, dtype=int))
    assert (s.random, s.oracle, s.best_fixed, s.best_fixed_success, s.headroom) == (
        ref.success_random, ref.success_oracle, ref.best_fixed, ref.success_best_fixed, ref.headroom)
    assert s.best_fixed_advantage == ref.best_fixed_advantage
    assert s.r2_scene == r2_scene(y)[0]
    assert s.oracle_top_pick_share == oracle_tie_counts(y).max() / 40
    assert discriminates(s.random, s.oracle) == (s.oracle - s.random >= 0.10 and 0.30 <= s.random <= 0.85)
