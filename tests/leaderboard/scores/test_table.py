"""A scores table with the wrong columns: the message lists every column a scores file may
have, `score` included, and echoes the columns the file has."""

from __future__ import annotations

import pandas as pd
import pytest

from leaderboard.errors import InputError
from leaderboard.scores import parse_scores_table

EXPERIENCES, SCENES = ("e0", "e1"), ("s0", "s1")


def _frame(columns: list[str]) -> pd.DataFrame:
    rows = [([f"s{q}", f"e{k}"] + ["0.5"] * len(columns))[:len(columns)]
            for q in range(2) for k in range(2)]
    return pd.DataFrame(rows, columns=columns, dtype=object)


@pytest.mark.parametrize("columns", [["scene_id", "experience_id", "value"],
                                     ["scene_id", "experience_id", "score", "value"]])
def test_an_unknown_column_names_score_and_the_columns_found(columns):
    with pytest.raises(InputError) as caught:
        parse_scores_table(_frame(columns), EXPERIENCES, SCENES, source="mine.csv")
    message = str(caught.value)
    assert "expected: scene_id, experience_id, score" in message, message
    assert f"the file's columns: {', '.join(columns)}" in message, message


def test_a_missing_column_echoes_the_columns_found():
    with pytest.raises(InputError, match=r"field 'scene_id': missing column \(expected columns: "
                                         r"scene_id, experience_id, score\); the file's columns: "
                                         r"scene, experience_id, score"):
        parse_scores_table(_frame(["scene", "experience_id", "score"]), EXPERIENCES, SCENES,
                           source="mine.csv")
