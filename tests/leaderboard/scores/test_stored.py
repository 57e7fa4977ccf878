"""The stored validated table: the same scores back, the same bytes for the same scores,
and anything else refused."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.scores import SettingScores, StoredScoresDamaged, decode_scores, encode_scores


def _validated():
    rng = np.random.default_rng(0)
    return [SettingScores("a", rng.normal(size=(3, 5)), False),
            SettingScores("b", np.eye(2, 4), True)]


def test_the_scores_come_back_as_they_were_stored():
    back = decode_scores(encode_scores(_validated()))
    for stored, original in zip(back, _validated()):
        assert (stored.setting_id, stored.selection_only) == (original.setting_id, original.selection_only)
        np.testing.assert_array_equal(stored.scores, original.scores)
    assert encode_scores(_validated()) == encode_scores(_validated())


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-8], "do not match the shapes listed"),
    (lambda b: b.replace(b'"format": 1', b'"format": 2'), "not an artifact of format 1"),
    (lambda b: b"not json\n" + b, "unreadable head"),
    (lambda b: b.replace(b"\n", b" "), "not an artifact of format 1"),
])
def test_a_damaged_artifact_is_refused(damage, message):
    with pytest.raises(StoredScoresDamaged, match=message):
        decode_scores(damage(encode_scores(_validated())))
