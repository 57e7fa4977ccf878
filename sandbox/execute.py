"""One job boundary for a container submission: run the selector, then read its scores.

The service calls `run_selector` and stores `SelectorRun.result.to_dict()` on
the submission whatever happened; `scores` is set only when the run ended
`ok` and the scores file passed the same validation as an uploaded one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from leaderboard.errors import InputError
from leaderboard.scores import ScoresInput
from sandbox.base import RunResult, RunSpec, RunStatus, SelectorSandbox
from sandbox.protocol import read_output


@dataclass(frozen=True)
class SelectorRun:
    """The run's result and, when it succeeded, the validated scores (K, Q)."""

    result: RunResult
    scores: ScoresInput | None


def run_selector(sandbox: SelectorSandbox, spec: RunSpec, experience_ids: Sequence[str],
                 scene_ids: Sequence[str]) -> SelectorRun:
    """Run `spec` in `sandbox` and validate /output/scores.csv against the ids.

    A scores file that fails validation turns an `ok` run into
    `output_invalid`, with the validator's message (file, line, field, value)
    as the reason.
    """
    result = sandbox.run(spec)
    if result.status is not RunStatus.OK:
        return SelectorRun(result, None)
    try:
        scores = read_output(spec.output_dir, experience_ids, scene_ids)
    except InputError as exc:
        return SelectorRun(replace(result, status=RunStatus.OUTPUT_INVALID, reason=str(exc)), None)
    return SelectorRun(result, scores)
