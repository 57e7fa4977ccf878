"""The readout report as a JSON-ready dict (schema `expaudit-readout-report/1`).

Top level: `schema_version`, `bank` (task, coordinate, unit, grid), `inputs` (split, seed,
resamples and every fixed number), `notes`, `representations` (per representation: its
readout, per-initialization metrics, summaries, curves and failure predictors),
`paired_differences` and `primary_tests` (the Holm family). Null numbers always carry a reason.
"""

from __future__ import annotations

from leaderboard.readout import defaults
from leaderboard.readout.bank import BankInfo
from leaderboard.readout.metrics import CONSTANT_NOTE, METRIC_NAMES

TASK_NOTES = {
    "door": (
        "Door cells hold the latch turned clear of the frame and the arm's posture fixed while settling; "
        "in natural frames the latch turns only while the door opens, so the latch is one of the cues "
        "that co-vary with the hinge angle there and not in the controlled cells."
    ),
    "stack": (
        "Stack's coordinate is one component (world x) of a free object's position, the case where "
        "the paper's pattern did not reproduce."
    ),
}
"""What a reader must know beside a task's results (READOUT_SPEC, "Objects")."""

SPLIT_NOTES = {
    "confirm": "Confirmation initializations: the reported numbers.",
    "dev": "Development initializations: for checking a submission, not the confirmatory numbers.",
    "eval": "Evaluation initializations of the failure predictors: not the confirmatory numbers.",
}


def _representation(result) -> dict:
    constant = [m.initialization for m in result.metrics if m.constant_readout]
    return {
        "name": result.name,
        "input": result.kind,
        "source": result.source,
        "readout": result.readout,
        "summary": {name: result.summaries[name].to_dict() for name in METRIC_NAMES},
        "natural_mae_by_source": {source: s.to_dict() for source, s in result.natural_by_source.items()},
        "constant_readout": {"initializations": constant, "note": CONSTANT_NOTE if constant else None},
        "initializations": [m.to_dict() for m in result.metrics],
        "curves": result.curves,
        "failure_prediction": {
            "reason": result.failure_reason,
            "policies": {policy: block.to_dict() for policy, block in result.failure_prediction.items()},
        },
    }


def build_report(info: BankInfo, inputs: dict, results, tests, differences) -> dict:
    """Assemble the report dict from computed parts (see the module docstring for the layout)."""
    notes = [SPLIT_NOTES[inputs["split"]]]
    if info.task in TASK_NOTES:
        notes.append(TASK_NOTES[info.task])
    notes.append("A constant readout has gain 0 and context sensitivity 0; rows where the readout is "
                 "constant are flagged.")
    return {
        "schema_version": defaults.SCHEMA_VERSION,
        "bank": info.to_dict(),
        "inputs": inputs,
        "notes": notes,
        "representations": [_representation(r) for r in results],
        "paired_differences": differences,
        "primary_tests": {
            "adjustment": "holm",
            "family": [t.test_id for t in tests],
            "confirmatory": inputs["split"] == "confirm",
            "tests": [t.to_dict() for t in tests],
        },
    }


SEALED_SPLITS = ("confirm", "eval")
"""Splits whose labels are never published (READOUT_SPEC; docs/readout.md)."""
WITHHELD = ("initializations", "curves")
"""Per-representation parts of a report that would reveal a sealed split's labels: a
per-initialization gain is (p6 - p1) / (q6 - q1) with p computable from public features."""
WITHHELD_NOTE = ("Sealed split: per-initialization values and curves are withheld, as they would "
                 "reveal the split's labels; summaries, paired differences and tests are complete.")


def sealed_view(report: dict) -> dict:
    """The report as it may be published: on a sealed split, without the per-initialization
    values and curves of any representation (a report on a public split is returned whole)."""
    if report["inputs"]["split"] not in SEALED_SPLITS:
        return report
    representations = [{key: value for key, value in rep.items() if key not in WITHHELD}
                       for rep in report["representations"]]
    notes = list(report["notes"])
    if WITHHELD_NOTE not in notes:
        notes.append(WITHHELD_NOTE)
    return {**report, "notes": notes, "representations": representations}
