"""Failure prediction from readout diagnostics (READOUT_SPEC, "Relation to policy outcomes").

Four logistic models of a policy's failure, fitted on the `dev` initializations and scored on
the separate evaluation ones; one row per (initialization, execution-noise seed), covariates
per initialization:

- `M0`: initial natural error, initial coordinate, target's distance to the gripper;
- `MC`: M0 + mae_controlled; `MGR`: M0 + gain + context_sensitivity; `MCGR`: all of them.

All four use the same rows (initializations where every covariate is known; the others are
counted and left out), so their losses are paired. Brier score and log loss are means over
evaluation rows; the intervals of `MC - M0`, `MGR - M0`, `MGR - MC` resample evaluation
initializations (with all their seeds) and keep the dev fit fixed. This predicts failure;
it does not claim the diagnostics improve success.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.logistic import brier, fit_logistic, log_loss

BASE = ("initial_error", "initial_coordinate", "gripper_distance")
MODELS = {
    "M0": BASE,
    "MC": BASE + ("mae_controlled",),
    "MGR": BASE + ("gain", "context_sensitivity"),
    "MCGR": BASE + ("mae_controlled", "gain", "context_sensitivity"),
}
"""Each model's covariates, in order."""

COMPARISONS = (("MC", "M0"), ("MGR", "M0"), ("MGR", "MC"))
"""The paired loss differences reported (first minus second: negative favours the first)."""

COVARIATES = MODELS["MCGR"]
LOSSES = {"brier": brier, "log_loss": log_loss}


@dataclass(frozen=True)
class Covariates:
    """One initialization's covariates; None where not estimable (the row is then left out)."""

    initialization: str
    initial_error: float | None
    initial_coordinate: float | None
    gripper_distance: float | None
    mae_controlled: float | None
    gain: float | None
    context_sensitivity: float | None

    def missing(self) -> str | None:
        """The first unknown covariate's name, or None."""
        return next((name for name in COVARIATES if getattr(self, name) is None), None)


@dataclass(frozen=True)
class Outcome:
    """One policy run: its initialization, seed and whether it failed."""

    initialization: str
    seed: int
    failure: bool


@dataclass(frozen=True)
class Difference:
    """Mean loss difference (first - second) over evaluation rows with its interval."""

    first: str
    second: str
    loss: str
    mean: float
    low: float | None
    high: float | None

    def to_dict(self) -> dict:
        return {"comparison": f"{self.first} - {self.second}", "loss": self.loss, "mean": self.mean,
                "low": self.low, "high": self.high}


@dataclass(frozen=True)
class FailurePrediction:
    """Every model's losses and the paired differences, or None with a reason."""

    reason: str | None
    models: dict[str, dict] = field(default_factory=dict)
    differences: tuple[Difference, ...] = ()
    n_dev_rows: int = 0
    n_eval_rows: int = 0
    n_eval_initializations: int = 0
    left_out: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"reason": self.reason, "models": self.models,
                "differences": [d.to_dict() for d in self.differences], "n_dev_rows": self.n_dev_rows,
                "n_eval_rows": self.n_eval_rows, "n_eval_initializations": self.n_eval_initializations,
                "left_out": dict(sorted(self.left_out.items()))}


def _rows(covariates: Sequence[Covariates], outcomes: Sequence[Outcome], split: str, left_out: Counter):
    """(covariate matrix over COVARIATES, failures, initialization per row) of the usable rows."""
    by_id = {}
    for row in covariates:
        if row.initialization in by_id:
            raise BadArgument(f"{split} covariates: initialization '{row.initialization}' appears twice")
        by_id[row.initialization] = row
    x, y, ids = [], [], []
    for outcome in outcomes:
        row = by_id.get(outcome.initialization)
        if row is None:
            left_out[f"{split}: no covariates for the initialization"] += 1
            continue
        missing = row.missing()
        if missing is not None:
            left_out[f"{split}: {missing} not estimable"] += 1
            continue
        x.append([getattr(row, name) for name in COVARIATES])
        y.append(1.0 if outcome.failure else 0.0)
        ids.append(outcome.initialization)
    return np.asarray(x, dtype=np.float64).reshape(-1, len(COVARIATES)), np.asarray(y), ids


def _columns(model: str) -> list[int]:
    return [COVARIATES.index(name) for name in MODELS[model]]


def failure_prediction(dev: Sequence[Covariates], dev_outcomes: Sequence[Outcome],
                       evaluation: Sequence[Covariates], eval_outcomes: Sequence[Outcome], *,
                       n_resamples: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED) -> FailurePrediction:
    """Fit M0, MC, MGR, MCGR on dev, score them on the evaluation rows (one policy)."""
    left_out: Counter = Counter()
    x_dev, y_dev, _ = _rows(dev, dev_outcomes, "dev", left_out)
    x_eval, y_eval, eval_ids = _rows(evaluation, eval_outcomes, "eval", left_out)
    counts = {"n_dev_rows": len(y_dev), "n_eval_rows": len(y_eval),
              "n_eval_initializations": len(set(eval_ids)), "left_out": dict(left_out)}
    if len(y_dev) == 0 or len(y_eval) == 0:
        return FailurePrediction(f"no usable {'dev' if len(y_dev) == 0 else 'evaluation'} rows", **counts)
    failures, successes = int(y_dev.sum()), int(len(y_dev) - y_dev.sum())
    if min(failures, successes) < defaults.MIN_DEV_EACH_OUTCOME:
        return FailurePrediction(f"not fitted: the dev runs hold {failures} failures and {successes} successes, "
                                 f"at least {defaults.MIN_DEV_EACH_OUTCOME} of each are needed", **counts)
    losses, models = {}, {}
    for name in MODELS:
        cols = _columns(name)
        fitted = fit_logistic(x_dev[:, cols], y_dev)
        p = fitted.probability(x_eval[:, cols])
        losses[name] = {loss: fn(p, y_eval) for loss, fn in LOSSES.items()}
        models[name] = {"covariates": list(MODELS[name]), "intercept": fitted.intercept,
                        "coefficients": [float(v) for v in fitted.coefficients],
                        **{loss: float(np.mean(v)) for loss, v in losses[name].items()}}
    clusters, index = np.unique(np.asarray(eval_ids), return_inverse=True)
    sizes = np.bincount(index, minlength=len(clusters)).astype(np.float64)
    differences = []
    for first, second in COMPARISONS:
        for loss in LOSSES:
            delta = losses[first][loss] - losses[second][loss]
            sums = np.bincount(index, weights=delta, minlength=len(clusters))
            low, high = _cluster_interval(sums, sizes, n_resamples, seed)
            differences.append(Difference(first, second, loss, float(np.mean(delta)), low, high))
    return FailurePrediction(None, models, tuple(differences), **counts)


def _cluster_interval(sums: np.ndarray, sizes: np.ndarray, n_resamples: int, seed: int):
    """Percentile interval of sum(row values) / sum(rows) over resampled initializations."""
    if len(sums) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    draw = rng.integers(0, len(sums), size=(n_resamples, len(sums)))
    ratios = sums[draw].sum(axis=1) / sizes[draw].sum(axis=1)
    tail = 100.0 * (1.0 - defaults.CONFIDENCE) / 2.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return float(low), float(high)
