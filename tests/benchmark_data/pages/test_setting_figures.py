"""The setting-level figures of a transfer matrix (pure function)."""

import numpy as np
import pytest

from benchmark_data.pages.setting_figures import summarize
from leaderboard.metrics import defaults


def test_summary_of_a_known_matrix():
    y = np.array([[1.0, 0.0, 1.0, 0.0],
                  [0.0, 1.0, 1.0, 0.0],
                  [0.0, 0.0, 1.0, 0.0]])
    s = summarize(y)
    assert s.random == pytest.approx(5 / 12)
    assert s.oracle == pytest.approx(3 / 4)
    assert s.best_fixed == 0 and s.best_fixed_success == pytest.approx(0.5)  # tie -> lowest index
    assert s.headroom == pytest.approx(0.25)
    assert s.best_fixed_advantage == pytest.approx((0.5 - 5 / 12) / (0.75 - 5 / 12))
    # oracle counts: scene0 -> e0, scene1 -> e1, scenes 2 and 3 split three ways
    assert s.oracle_top_pick_share == pytest.approx((1 + 2 / 3) / 4)
    g = y.mean(axis=0)
    assert s.r2_scene == pytest.approx(1 - ((y - g) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def test_advantage_undefined_below_threshold_and_bad_shape():
    flat = summarize(np.full((3, 5), 0.5))
    assert flat.best_fixed_advantage is None and flat.r2_scene is None
    with pytest.raises(ValueError, match=r"y must be a non-empty \(K, Q\) matrix, got shape \(4,\)"):
        summarize(np.zeros(4))


def test_advantage_threshold_is_the_engines():
    """The page reads A from the engine: defined from exactly the engine's threshold up."""
    spread = defaults.ADVANTAGE_MIN_DENOMINATOR
    y = np.zeros((2, 20))
    y[0, 0] = 20 * spread * 2  # random = spread, oracle = 2 * spread: oracle - random = spread
    assert summarize(y).best_fixed_advantage == pytest.approx(1.0)
    y[0, 0] *= 0.9
    assert summarize(y).best_fixed_advantage is None
