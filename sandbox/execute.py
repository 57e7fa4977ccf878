"""One job boundary for a container submission: run the selector, then read its scores.

The service calls `run_selector` and stores `SelectorRun.result.to_dict()` on
the submission whatever happened; `scores` is set only when the run ended
`ok` and the scores file passed the same validation as an uploaded one.
`run_readout_program` is the same for a readout setting's program, whose
/output features pass the checks of an uploaded features file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import pandas as pd

from leaderboard.errors import InputError
from leaderboard.readout.inputs import Representation
from leaderboard.scores import ScoresInput
from sandbox.base import RunResult, RunSpec, RunStatus, SelectorSandbox
from sandbox.protocol import read_output
from sandbox.readout_protocol import read_features_output


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


@dataclass(frozen=True)
class ProgramRun:
    """A readout program's run and, when it succeeded, its checked features."""

    result: RunResult
    features: Representation | None


def run_readout_program(sandbox: SelectorSandbox, spec: RunSpec, observations: pd.DataFrame,
                        name: str) -> ProgramRun:
    """Run `spec` in `sandbox` and read its /output features against the bank's public
    `observations`, as representation `name`; invalid features turn an `ok` run into
    `output_invalid` with the reader's message (file, line, field, value)."""
    result = sandbox.run(spec)
    if result.status is not RunStatus.OK:
        return ProgramRun(result, None)
    try:
        features = read_features_output(spec.output_dir, observations, name)
    except InputError as exc:
        return ProgramRun(replace(result, status=RunStatus.OUTPUT_INVALID, reason=str(exc)), None)
    return ProgramRun(result, features)
