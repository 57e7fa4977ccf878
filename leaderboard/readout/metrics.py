"""The per-initialization metrics of READOUT_SPEC ("Metrics, per initialization"), pure.

`mae_natural`, `mae_controlled`, the signed endpoint gain `gain[s, c]` and its mean
`gain`, `gain_error` (over- and under-response do not cancel), `context_sensitivity`
and `slope`, each defined in docs/readout.md ("Metrics, per initialization"). Every
controlled metric is null with the grid's reason when the grid is not measurable
(`grid.grid_reason`: fewer than two usable contexts); `gain[s, c]` is None with its
reason for a context that is not usable. A constant readout has gain 0 and sensitivity
0: `constant_readout` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.grid import ControlledGrid, context_endpoints, grid_reason

METRIC_NAMES = ("mae_natural", "mae_controlled", "gain", "gain_error", "context_sensitivity", "slope")
"""The initialization-level metrics, in report order."""

CONSTANT_NOTE = ("constant readout: its prediction does not move over the controlled cells, so its gain "
                 "and its context sensitivity are 0 without any responsiveness or stability")
"""Said next to gain and context sensitivity wherever a constant readout makes both 0."""


@dataclass(frozen=True)
class Value:
    """A metric's value, or None with the reason it is not estimable (never a silent 0)."""

    value: float | None
    reason: str | None = None

    def to_dict(self) -> dict:
        return {"value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class ContextGain:
    """`gain[s, c]` of one admitted context, or None with a reason."""

    context: int
    gain: float | None
    reason: str | None = None

    def to_dict(self) -> dict:
        return {"context": self.context, "gain": self.gain, "reason": self.reason}


@dataclass(frozen=True)
class InitializationMetrics:
    """Every metric of one initialization `s`."""

    initialization: str
    mae_natural: Value
    mae_controlled: Value
    gain: Value
    gain_error: Value
    context_sensitivity: Value
    slope: Value
    gain_by_context: tuple[ContextGain, ...]
    constant_readout: bool
    n_natural: int
    n_cells: int

    def metric(self, name: str) -> Value:
        if name not in METRIC_NAMES:
            raise BadArgument(f"metric: unknown name '{name}', expected one of {', '.join(METRIC_NAMES)}")
        return getattr(self, name)

    def to_dict(self) -> dict:
        out = {"initialization": self.initialization, "n_natural": self.n_natural, "n_cells": self.n_cells,
               "constant_readout": self.constant_readout,
               "gain_by_context": [g.to_dict() for g in self.gain_by_context]}
        out.update({name: self.metric(name).to_dict() for name in METRIC_NAMES})
        if self.constant_readout:
            out["note"] = CONSTANT_NOTE
        return out


def _vector(values, what: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(x).all():
        raise BadArgument(f"{what}: holds NaN or infinite values")
    return x


def mae_natural(prediction, coordinate) -> Value:
    """Mean absolute error over one initialization's natural observations."""
    p, y = _vector(prediction, "natural prediction"), _vector(coordinate, "natural coordinate")
    if p.shape != y.shape:
        raise BadArgument(f"natural prediction: {len(p)} values for {len(y)} coordinates")
    if not len(p):
        return Value(None, "no natural observations")
    return Value(float(np.mean(np.abs(p - y))))


def is_constant(prediction: np.ndarray) -> bool:
    """True when predictions spread by no more than `CONSTANT_RTOL` relative to their size."""
    if not len(prediction):
        return False
    spread = float(prediction.max() - prediction.min())
    return spread <= defaults.CONSTANT_RTOL * max(float(np.abs(prediction).max()), 1.0)


def context_gains(grid: ControlledGrid, min_separation: float) -> tuple[ContextGain, ...]:
    """`gain[s, c]` for every context with an admitted cell, None with a reason where it is not usable."""
    out = []
    for context in grid.contexts:
        ends = context_endpoints(grid, context, min_separation)
        if ends.reason is not None:
            out.append(ContextGain(context, None, ends.reason))
            continue
        p, q = grid.prediction, grid.coordinate
        out.append(ContextGain(context, float((p[ends.last] - p[ends.first]) / (q[ends.last] - q[ends.first]))))
    return tuple(out)


def _context_sensitivity(grid: ControlledGrid) -> float:
    ranges = []
    for index in range(grid.grid_size):
        at = grid.prediction[grid.grid_index == index]
        if len(at) >= 2:
            ranges.append(float(at.max() - at.min()))
    return float(np.mean(ranges))


def _slope(grid: ControlledGrid) -> float:
    dq = grid.coordinate - grid.coordinate.mean()
    dp = grid.prediction - grid.prediction.mean()
    return float(dq @ dp / (dq @ dq))


def initialization_metrics(
    initialization: str,
    natural_prediction,
    natural_coordinate,
    grid: ControlledGrid,
    *,
    min_separation: float,
) -> InitializationMetrics:
    """Every metric of one initialization.

    Parameters
    ----------
    initialization : its id.
    natural_prediction, natural_coordinate : (N,) predictions and true coordinates of its
        natural observations.
    grid : its admitted controlled cells.
    min_separation : the task's minimum endpoint separation, in the coordinate's units.
    """
    natural = mae_natural(natural_prediction, natural_coordinate)
    gains = context_gains(grid, min_separation)
    reason = grid_reason(grid, min_separation)
    constant = is_constant(grid.prediction)
    if reason is not None:
        none = Value(None, reason)
        controlled = dict.fromkeys(METRIC_NAMES[1:], none)
    else:
        values = np.array([g.gain for g in gains if g.gain is not None])
        controlled = {
            "mae_controlled": Value(float(np.mean(np.abs(grid.prediction - grid.coordinate)))),
            "gain": Value(float(np.mean(values))),
            "gain_error": Value(float(np.mean(np.abs(values - 1.0)))),
            "context_sensitivity": Value(_context_sensitivity(grid)),
            "slope": Value(_slope(grid)),
        }
    return InitializationMetrics(
        initialization=initialization, mae_natural=natural, gain_by_context=gains,
        constant_readout=constant, n_natural=len(np.asarray(natural_coordinate).reshape(-1)),
        n_cells=len(grid.prediction), **controlled,
    )
