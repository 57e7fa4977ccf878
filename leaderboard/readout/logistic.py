"""L2-penalised logistic regression by Newton's method, for the failure predictors.

Covariates are standardised with the fitting data's mean and standard deviation (a covariate
constant up to rounding, as for the ridge readout, keeps scale 1 and contributes nothing); the fit minimises
`sum_i logloss_i + ||w||^2 / (2 C)` with the intercept unpenalised, `C = LOGISTIC_C`. The
penalty keeps the coefficients finite when the few dev outcomes are separable by the
covariates; the objective is strictly convex in `w`, and each Newton step is halved until
it lowers the objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults


@dataclass(frozen=True)
class LogisticModel:
    """A fitted model: `probability(x)` of the positive class (failure) per row."""

    mean: np.ndarray
    scale: np.ndarray
    intercept: float
    coefficients: np.ndarray

    def probability(self, covariates: np.ndarray) -> np.ndarray:
        x = np.asarray(covariates, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.mean):
            raise BadArgument(f"covariates: expected (rows, {len(self.mean)}), got shape {x.shape}")
        return _sigmoid(self.intercept + ((x - self.mean) / self.scale) @ self.coefficients)


def _sigmoid(eta: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -eta))


def _objective(beta: np.ndarray, design: np.ndarray, y: np.ndarray, penalty: float) -> float:
    eta = design @ beta
    # log(1 + e^eta) - y eta is the log loss of a row, computed without overflow
    return float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * penalty * beta[1:] @ beta[1:])


def fit_logistic(covariates, outcomes, *, c: float = defaults.LOGISTIC_C) -> LogisticModel:
    """Fit on covariates (n, k) and binary outcomes (n,) (1 = the event predicted)."""
    x = np.asarray(covariates, dtype=np.float64)
    y = np.asarray(outcomes, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise BadArgument(f"covariates {x.shape} and outcomes {y.shape} do not match")
    if not np.isfinite(x).all():
        raise BadArgument("covariates: hold NaN or infinite values")
    if not np.isin(y, (0.0, 1.0)).all():
        raise BadArgument("outcomes: must be 0 or 1")
    if y.min() == y.max():
        raise BadArgument(f"outcomes: all {int(y[0])}, a logistic model needs both outcomes")
    if not c > 0:
        raise BadArgument(f"c: must be positive, got {c}")
    mean, std = x.mean(axis=0), x.std(axis=0)
    scale = np.where(std > defaults.ZERO_STD_RTOL * np.maximum(np.abs(mean), 1.0), std, 1.0)
    design = np.column_stack([np.ones(len(y)), (x - mean) / scale])
    ridge = np.eye(design.shape[1]) / c
    ridge[0, 0] = 0.0
    beta = np.zeros(design.shape[1])
    current = _objective(beta, design, y, 1.0 / c)
    for _ in range(defaults.LOGISTIC_MAX_ITER):
        p = _sigmoid(design @ beta)
        gradient = design.T @ (p - y) + ridge @ beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while True:
            candidate = beta - size * step
            value = _objective(candidate, design, y, 1.0 / c)
            if value <= current or size < 1e-10:
                break
            size /= 2.0
        beta, current = candidate, value
        if np.max(np.abs(size * step)) < defaults.LOGISTIC_TOL:
            break
    return LogisticModel(mean=mean, scale=scale, intercept=float(beta[0]), coefficients=beta[1:].copy())


def brier(probability: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Per-row Brier score (p - y)^2."""
    return (np.asarray(probability) - np.asarray(outcome)) ** 2


def log_loss(probability: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Per-row log loss, probabilities clipped to [eps, 1 - eps] (`LOG_LOSS_EPS`)."""
    p = np.clip(np.asarray(probability, dtype=np.float64), defaults.LOG_LOSS_EPS, 1 - defaults.LOG_LOSS_EPS)
    y = np.asarray(outcome, dtype=np.float64)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))
