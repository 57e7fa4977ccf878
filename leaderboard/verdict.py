"""The verdict line: how to read a result (AUDIT_SPEC "Reading a result").

Rules are applied in the spec's order; the first that matches gives the label.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.metrics import defaults
from leaderboard.metrics.selection import FLOAT_TOLERANCE

PER_SCENE_SKILL = "per-scene skill"
ONE_GOOD_EXPERIENCE = "one good experience"
WRONG_SCENE_ASSIGNMENT = "wrong-scene assignment"
NOT_DISTINGUISHABLE = "not distinguishable"


@dataclass(frozen=True)
class Verdict:
    """One of the four labels and a sentence with the numbers behind it."""

    label: str
    text: str


def verdict(
    concentration_ratio: float,
    success_rule: float,
    success_best_fixed: float,
    gap_direction: str | None,
    gap_computed: bool = True,
) -> Verdict:
    """Label a result from its concentration, best-fixed distance and gap direction.

    `gap_direction` is "above", "below" or None (inside the envelope, or not
    computed when `gap_computed` is False).
    """
    ratio_text = f"concentration ratio {concentration_ratio:.2f}"
    distance = success_rule - success_best_fixed
    spreads = concentration_ratio <= defaults.CONCENTRATION_RATIO_SPREAD + FLOAT_TOLERANCE
    if spreads and distance > 0:
        return Verdict(
            PER_SCENE_SKILL,
            (
                f"Spreads its selections ({ratio_text} <= {defaults.CONCENTRATION_RATIO_SPREAD}) "
                f"and beats best-fixed by {distance:.3f} in success."
            ),
        )
    if not spreads and abs(distance) <= defaults.BEST_FIXED_WINDOW + FLOAT_TOLERANCE:
        return Verdict(
            ONE_GOOD_EXPERIENCE,
            (
                f"Concentrates ({ratio_text} > {defaults.CONCENTRATION_RATIO_SPREAD}) and lands "
                f"within {defaults.BEST_FIXED_WINDOW} of best-fixed ({distance:+.3f}): the score "
                "reflects one good experience, not per-scene selection."
            ),
        )
    if gap_direction == "below":
        return Verdict(
            WRONG_SCENE_ASSIGNMENT,
            (
                "Below the envelope of its frequency-matched shuffles: the rule assigns its "
                "selections to the wrong scenes."
            ),
        )
    if not gap_computed:
        gap_text = "gap not computable"
    elif gap_direction == "above":
        gap_text = "gap above its shuffle envelope"
    else:
        gap_text = "gap inside its shuffle envelope"
    return Verdict(
        NOT_DISTINGUISHABLE,
        (
            f"None of the three patterns holds ({ratio_text}, {distance:+.3f} against best-fixed, "
            f"{gap_text}). With few states the envelope is wide: this shows compatibility, not equivalence."
        ),
    )
