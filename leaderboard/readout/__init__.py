"""The readout audit (READOUT_SPEC, Track B): does a representation's fitted readout follow
the physical coordinate when only the coordinate changes, and stay put when only the robot
changes?

Pure engine: `ridge` (the spec's readout), `grid` (a controlled grid and when it can be
measured), `metrics` (per initialization), `summaries` (initialization-bootstrap means and
paired differences), `sign_tests` (the primary tests with Holm), `logistic` and
`predictors` (failure prediction), `bank` and `inputs` (the files), `assemble` and `audit`
(the whole report), `report` (its JSON layout). Nothing here imports the service, the
simulator or the frozen data.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "ControlledGrid": "leaderboard.readout.grid",
    "InitializationMetrics": "leaderboard.readout.metrics", "initialization_metrics": "leaderboard.readout.metrics",
    "METRIC_NAMES": "leaderboard.readout.metrics",
    "RidgeReadout": "leaderboard.readout.ridge", "fit_ridge": "leaderboard.readout.ridge",
    "summarize": "leaderboard.readout.summaries", "paired_difference": "leaderboard.readout.summaries",
    "bootstrap_interval": "leaderboard.readout.summaries",
    "sign_test": "leaderboard.readout.sign_tests", "holm": "leaderboard.readout.sign_tests",
    "holm_family": "leaderboard.readout.sign_tests", "primary_tests": "leaderboard.readout.sign_tests",
    "failure_prediction": "leaderboard.readout.predictors",
    "read_bank": "leaderboard.readout.bank", "read_features": "leaderboard.readout.inputs",
    "read_predictions": "leaderboard.readout.inputs",
    "run_readout_audit": "leaderboard.readout.audit",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'leaderboard.readout' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
