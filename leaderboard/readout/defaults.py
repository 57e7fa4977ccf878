"""Every fixed number of the readout audit (READOUT_SPEC), each with the reason for its value.

Changing one changes published numbers, so each report writes them into its
`inputs` block.
"""

from __future__ import annotations

SCHEMA_VERSION = "expaudit-readout-report/1"
"""Layout of the readout report's JSON; bumped when a key is renamed or removed."""

RIDGE_LAMBDA = 1e-3
"""Ridge penalty of the spec's readout (the paper's lambda = 0.001) on standardised features."""

ZERO_STD_RTOL = 1e-10
"""A feature whose train standard deviation is at most this times max(|mean|, 1) is constant
on train: it is left out of the readout (its standardised value would divide by zero)."""

GRID_SIZE = 6
"""Target coordinates per controlled grid (the spec's 6 x 4 crossing)."""

N_CONTEXTS = 4
"""Robot contexts per controlled grid."""

MIN_CONTEXTS = 2
"""An initialization needs at least this many admitted contexts: a range over contexts, and a
mean of per-context gains, say nothing with one."""

CONSTANT_RTOL = 1e-9
"""Predictions whose spread over an initialization's admitted cells is at most this times
max(|prediction|, 1) are a constant readout (flagged: its gain and sensitivity are 0)."""

TIE_RTOL = 1e-9
"""A sign-test difference `a - b` within this times max(|a|, |b|, 1) is a tie (dropped): a
difference that small is floating-point rounding, not a direction (1e-9 degree or mm, or 1e-9
of a unit gain, is far below anything physical)."""

MIN_ESTIMABLE_INITIALIZATIONS = 16
"""Estimability gate (docs/readout_protocol.md): a task's primary tests are run only when at
least this many audited initializations (16 of confirm's 24) have an estimable gain."""

MIN_DEV_EACH_OUTCOME = 3
"""Failure-link gate (docs/readout_protocol.md): the logistic models are fitted only when the
dev runs hold at least this many failures and this many successes."""

N_BOOTSTRAP = 2000
"""Initialization-bootstrap resamples of every interval (the spec's 2000)."""

CONFIDENCE = 0.95
"""Coverage of the percentile intervals."""

SEED = 0
"""Default seed of every random draw; written into the report."""

LOGISTIC_C = 1.0
"""Inverse L2 strength of the failure predictors on standardised covariates (the usual
default, C = 1): it keeps coefficients finite when dev outcomes are separable."""

LOGISTIC_MAX_ITER = 100
"""Newton steps of the logistic fit; the penalised log likelihood is strictly concave, so it
converges in a handful."""

LOGISTIC_TOL = 1e-10
"""Newton stops when the largest coefficient step is below this."""

LOG_LOSS_EPS = 1e-15
"""Predicted probabilities are clipped to [eps, 1 - eps] before the log loss (a certain wrong
prediction would otherwise cost infinity)."""

CURVE_INITIALIZATIONS = 3
"""Initializations whose prediction-against-coordinate curves the report carries (the first by
id): enough to see the response, few enough to keep labels of a held-out split out of print."""
