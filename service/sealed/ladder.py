"""The Ladder: how much a sealed setting tells a submitter, and the bound on it.

A sealed setting's report releases one number, the success of the submitted
choices, and only through the Ladder of Blum and Hardt ("The Ladder: A
Reliable Leaderboard for Machine Learning Competitions", ICML 2015): a
submission's score is released when it beats the submitter's best released
score by the margin, rounded to a multiple of the margin; otherwise the report
says only that it did not, and the best stays. Released values rise by at
least one margin each time on a fixed grid, so the whole sequence of reports a
submitter ever sees is fixed by when the best rose and to which grid value.
That caps what adaptive probing can learn (`information_bound_bits`), however
the submissions are crafted. The submitter is a token's owner, not the token
(`service.sealed.report`): an owner with many tokens climbs one Ladder, so the
bound holds per owner.

Pure functions: numbers in, a result object out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from expaudit.errors import InternalError


class BadLadderInput(InternalError, ValueError):
    """A scene count or a score the Ladder cannot take (both come from the audit: a bug)."""


@dataclass(frozen=True)
class Release:
    """What one sealed submission's report may say.

    Attributes:
        value: this submission's released success (a multiple of `margin`),
            None when it did not beat `previous_best` by the margin.
        best: the submitter's best released success after this submission.
        previous_best: the best before it (None for a submitter's first).
        margin: the step of the Ladder for this setting.
    """

    value: float | None
    best: float
    previous_best: float | None
    margin: float

    @property
    def new_best(self) -> bool:
        return self.value is not None


def ladder_margin(n_scenes: int) -> float:
    """The Ladder's step for a setting of `n_scenes` query scenes: 1/sqrt(Q), rounded up
    to a hundredth.

    A success rate over Q scenes has a standard error of at most 0.5/sqrt(Q),
    so the margin is two standard errors: smaller differences are not
    significant anyway. Q=200 gives 0.08; Q=16 gives 0.25.
    """
    if n_scenes < 1:
        raise BadLadderInput(f"n_scenes must be positive, got {n_scenes}")
    return math.ceil(100 / math.sqrt(n_scenes) - 1e-9) / 100


def on_grid(value: float, margin: float) -> float:
    """`value` rounded to the nearest multiple of `margin` (six decimals, as reports are)."""
    return round(round(value / margin) * margin, 6) + 0.0


def ladder_release(previous_best: float | None, score: float, margin: float) -> Release:
    """Release `score` if it beats `previous_best` by `margin` (a first submission always
    releases), rounded to the margin's grid; otherwise release nothing new."""
    if not 0.0 <= score <= 1.0:
        raise BadLadderInput(f"score must be a success rate in [0, 1], got {score}")
    if previous_best is None or score >= previous_best + margin - 1e-12:
        value = on_grid(score, margin)
        return Release(value=value, best=value, previous_best=previous_best, margin=margin)
    return Release(value=None, best=previous_best, previous_best=previous_best, margin=margin)


def grid_size(margin: float) -> int:
    """How many values a released score can take in [0, 1]."""
    return math.floor(1 / margin + 1e-9) + 1


def information_bound_bits(n_submissions: int, margin: float) -> float:
    """An upper bound, in bits, on what `n_submissions` reports of one owner (all its
    tokens together) on one sealed setting can reveal.

    Released values strictly rise on a grid of G = `grid_size(margin)` values,
    so there are at most G releases; the transcript is fixed by which
    submissions released (at most G of n, at most G log2(n + 1) bits) and the
    set of values released (a subset of the grid, at most G bits).
    """
    g = grid_size(margin)
    return g * math.log2(n_submissions + 1) + g
