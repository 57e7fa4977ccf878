"""Reference quantities against a hand-computed case."""

import numpy as np
import pytest

from leaderboard.metrics.reference import library_references, reference_quantities
from leaderboard.metrics.selection import select
from tests.support.hand_case import SCORES, Y  # three experiences, four scenes, worked by hand below


def test_reference_quantities_hand_computed():
    ref = reference_quantities(Y, select(SCORES))
    assert ref.success_rule == pytest.approx(0.45)
    assert ref.success_random == pytest.approx(4.6 / 12)
    assert ref.success_oracle == pytest.approx(0.7)
    assert ref.best_fixed == 0  # e0 and e1 tie at 0.45: lowest index
    assert ref.success_best_fixed == pytest.approx(0.45)
    assert ref.headroom == pytest.approx(0.25)
    assert ref.advantage == pytest.approx(4 / 19)  # (27/60 - 23/60) / (42/60 - 23/60)
    assert ref.advantage_reason is None
    assert ref.best_fixed_advantage == pytest.approx(4 / 19)
    np.testing.assert_allclose(ref.quality, [0.45, 0.45, 0.25])
    np.testing.assert_allclose(ref.margin, [1 / 15, 1 / 15, -2 / 15])


def test_library_references_and_best_fixed_on_a_second_case():
    y = np.array([[0.2, 0.4], [0.6, 0.0], [0.2, 1.0]])
    random, oracle, quality = library_references(y)
    assert random == pytest.approx(2.4 / 6)
    assert oracle == pytest.approx(0.8)
    np.testing.assert_allclose(quality, [0.3, 0.3, 0.6])
    ref = reference_quantities(y, np.array([1, 2]))
    assert ref.best_fixed == 2
    assert ref.success_rule == pytest.approx(0.8)
    assert ref.advantage == pytest.approx(1.0)
    assert ref.headroom == pytest.approx(0.2)
