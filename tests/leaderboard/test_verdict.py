"""The verdict line: each label from the numbers that decide it."""

import pytest

from leaderboard.verdict import verdict


@pytest.mark.parametrize(
    ("ratio", "rule", "best", "direction", "label"),
    [
        (1.2, 0.70, 0.60, None, "per-scene skill"),
        (1.5, 0.61, 0.60, "above", "per-scene skill"),
        (2.4, 0.58, 0.60, None, "one good experience"),
        (1.51, 0.65, 0.60, None, "one good experience"),
        (2.4, 0.40, 0.60, "below", "wrong-scene assignment"),
        (1.0, 0.50, 0.60, "below", "wrong-scene assignment"),
        (1.0, 0.50, 0.60, None, "not distinguishable"),
        (3.0, 0.20, 0.60, "above", "not distinguishable"),
    ],
)
def test_verdict_labels(ratio, rule, best, direction, label):
    assert verdict(ratio, rule, best, direction).label == label


def test_verdict_text_names_the_numbers():
    text = verdict(2.4, 0.58, 0.60, None).text
    assert "concentration ratio 2.40" in text
    assert "-0.020" in text
    assert "not computable" in verdict(1.0, 0.5, 0.6, None, gap_computed=False).text
