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

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".grid": ("ControlledGrid",),
    ".metrics": ("InitializationMetrics", "initialization_metrics", "METRIC_NAMES"),
    ".ridge": ("RidgeReadout", "fit_ridge"),
    ".summaries": ("summarize", "paired_difference", "bootstrap_interval"),
    ".sign_tests": ("sign_test", "holm", "holm_family", "primary_tests"),
    ".predictors": ("failure_prediction",),
    ".bank": ("read_bank",),
    ".inputs": ("read_features", "read_predictions"),
    ".audit": ("run_readout_audit",),
    ".report": ("sealed_view",),
})
