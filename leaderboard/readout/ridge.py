"""The spec's readout: ridge regression (lambda = 0.001) on train-standardised features.

Features are standardised with the mean and standard deviation (population, ddof 0) of the
`train` natural observations; a feature constant on train is left out, because its
standardised value is undefined, and the readout records how many were. The intercept is not
penalised: on centred features it is the mean train label. The weights solve
`(Z'Z + lambda I) w = Z'(y - mean y)`, in the dual form `w = Z'(ZZ' + lambda I)^-1 (y - mean y)`
when there are more features than train observations (the same solution, a smaller system).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults


@dataclass(frozen=True)
class RidgeReadout:
    """A fitted readout: `predict(features)` gives the coordinate in its units.

    `mean`, `scale` (D,) standardise; `kept` (D,) marks the features with a non-zero train
    standard deviation; `weights` (D_kept,); `intercept` the train label mean.
    """

    mean: np.ndarray
    scale: np.ndarray
    kept: np.ndarray
    weights: np.ndarray
    intercept: float
    penalty: float
    n_train: int

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    @property
    def n_constant_features(self) -> int:
        """Features left out because they are constant on train."""
        return int((~self.kept).sum())

    @property
    def constant(self) -> bool:
        """True when no feature varies on train: the readout predicts the train mean everywhere."""
        return not bool(self.kept.any())

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Predictions (N,) for features (N, D)."""
        x = _matrix(features, "features")
        if x.shape[1] != self.n_features:
            raise BadArgument(f"features: {x.shape[1]} columns, the readout was fitted on {self.n_features}")
        z = (x[:, self.kept] - self.mean[self.kept]) / self.scale[self.kept]
        return z @ self.weights + self.intercept

    def to_dict(self) -> dict:
        """The readout's shape for the report (not its weights)."""
        return {"kind": "ridge", "lambda": self.penalty, "n_train": self.n_train,
                "n_features": self.n_features, "n_constant_features": self.n_constant_features,
                "constant": self.constant}


def _matrix(values, what: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise BadArgument(f"{what}: expected a 2-d array (observations x features), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise BadArgument(f"{what}: holds NaN or infinite values")
    return x


def fit_ridge(features: np.ndarray, labels: np.ndarray, penalty: float = defaults.RIDGE_LAMBDA) -> RidgeReadout:
    """Fit the readout on the train natural observations.

    Parameters
    ----------
    features : (N, D) train natural features.
    labels : (N,) their true coordinates.
    penalty : lambda of `||y - Zw - b||^2 + lambda ||w||^2`.
    """
    x = _matrix(features, "features")
    y = np.asarray(labels, dtype=np.float64)
    if y.shape != (x.shape[0],):
        raise BadArgument(f"labels: shape {y.shape} does not match {x.shape[0]} feature rows")
    if x.shape[0] < 2:
        raise BadArgument(f"features: {x.shape[0]} train observations, the readout needs at least 2")
    if not np.isfinite(y).all():
        raise BadArgument("labels: holds NaN or infinite values")
    if not penalty > 0:
        raise BadArgument(f"penalty: must be positive, got {penalty}")
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    kept = std > defaults.ZERO_STD_RTOL * np.maximum(np.abs(mean), 1.0)
    scale = np.where(kept, std, 1.0)
    z = (x[:, kept] - mean[kept]) / scale[kept]
    intercept = float(y.mean())
    centred = y - intercept
    n, d = z.shape
    if d <= n:
        weights = np.linalg.solve(z.T @ z + penalty * np.eye(d), z.T @ centred)
    else:
        weights = z.T @ np.linalg.solve(z @ z.T + penalty * np.eye(n), centred)
    return RidgeReadout(mean=mean, scale=scale, kept=kept, weights=weights, intercept=intercept,
                        penalty=float(penalty), n_train=n)
