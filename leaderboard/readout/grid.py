"""One initialization's controlled grid and the rule that says whether it can be measured.

A grid crosses `grid_size` target coordinates (grid indices 0..grid_size-1, in increasing
target order) with `n_contexts` robot contexts; only admitted cells (physical validation
passed) are held. Definitions (docs/readout.md, "Not estimable"; docs/readout_protocol.md,
"Estimability"):

- the *endpoints* of a context are its admitted cells at the first and the last grid index
  (the grid's lowest and highest target), with actual coordinates `q_1` and `q_6`;
- a context is *usable* when both endpoints are admitted and `q_6 - q_1` is at least the
  task's minimum separation; the gains average over usable contexts only;
- the grid is *measurable* when it has at least `MIN_CONTEXTS` usable contexts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.errors import BadArgument
from leaderboard.readout import defaults


@dataclass(frozen=True)
class ControlledGrid:
    """The admitted cells of one initialization, one entry per cell (M,).

    `coordinate` is the actual coordinate after settling (the label), `prediction` the
    readout's output, both in the task's units.
    """

    context: np.ndarray
    grid_index: np.ndarray
    coordinate: np.ndarray
    prediction: np.ndarray
    grid_size: int = defaults.GRID_SIZE
    n_contexts: int = defaults.N_CONTEXTS

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("context", "grid_index", "coordinate", "prediction"):
            kind = np.int64 if name in ("context", "grid_index") else np.float64
            value = np.asarray(getattr(self, name), dtype=kind).reshape(-1)
            object.__setattr__(self, name, value)
            arrays[name] = value
        sizes = {name: len(value) for name, value in arrays.items()}
        if len(set(sizes.values())) != 1:
            raise BadArgument(f"grid arrays differ in length: {sizes}")
        for name in ("coordinate", "prediction"):
            if not np.isfinite(arrays[name]).all():
                raise BadArgument(f"grid {name}: holds NaN or infinite values")
        for name, limit in (("context", self.n_contexts), ("grid_index", self.grid_size)):
            bad = arrays[name][(arrays[name] < 0) | (arrays[name] >= limit)]
            if len(bad):
                raise BadArgument(f"grid {name}: value {int(bad[0])} outside 0..{limit - 1}")
        keys = self.context * self.grid_size + self.grid_index
        if len(np.unique(keys)) != len(keys):
            raise BadArgument("grid: a (context, grid_index) cell appears twice")

    @property
    def contexts(self) -> tuple[int, ...]:
        """The admitted contexts, in increasing order."""
        return tuple(int(c) for c in np.unique(self.context))

    def cell(self, context: int, grid_index: int) -> int | None:
        """Position of the admitted cell, or None when that cell is not admitted."""
        where = np.flatnonzero((self.context == context) & (self.grid_index == grid_index))
        return int(where[0]) if len(where) else None


@dataclass(frozen=True)
class ContextEndpoints:
    """Positions of a context's two endpoint cells, or a reason why it has no usable pair."""

    context: int
    first: int | None
    last: int | None
    reason: str | None
    missing: bool = False
    """True when an endpoint cell is not admitted (else the reason, if any, is separation)."""


def context_endpoints(grid: ControlledGrid, context: int, min_separation: float) -> ContextEndpoints:
    """The endpoint cells of one context, checked for presence and separation."""
    last_index = grid.grid_size - 1
    first, last = grid.cell(context, 0), grid.cell(context, last_index)
    missing = [str(g) for g, pos in ((0, first), (last_index, last)) if pos is None]
    if missing:
        return ContextEndpoints(context, first, last,
                                f"context {context} lacks its endpoint at grid index {' and '.join(missing)}",
                                missing=True)
    separation = float(grid.coordinate[last] - grid.coordinate[first])
    if separation < min_separation:
        return ContextEndpoints(context, first, last,
                                f"context {context}'s endpoints are {separation:.6g} apart, "
                                f"below the minimum separation {min_separation:.6g}")
    return ContextEndpoints(context, first, last, None)


def usable_contexts(grid: ControlledGrid, min_separation: float) -> tuple[ContextEndpoints, ...]:
    """The endpoint check of every context with an admitted cell, in context order."""
    if not min_separation > 0:
        raise BadArgument(f"min_separation: must be positive, got {min_separation}")
    return tuple(context_endpoints(grid, c, min_separation) for c in grid.contexts)


def grid_reason(grid: ControlledGrid, min_separation: float) -> str | None:
    """Why the grid's metrics are not estimable (fewer than `MIN_CONTEXTS` usable contexts),
    or None when they are.

    The reason names the first failing condition of the protocol: no context with both
    endpoints admitted; then too few contexts with both endpoints; then too few of those
    with endpoints at least `min_separation` apart.
    """
    checks = usable_contexts(grid, min_separation)
    need = defaults.MIN_CONTEXTS
    complete = [c for c in checks if not c.missing]
    usable = [c for c in complete if c.reason is None]
    if len(usable) >= need:
        return None
    if not complete:
        return "no context has both endpoints admitted" + (f" ({checks[0].reason})" if checks else "")
    if len(complete) < need:
        return f"{len(complete)} context with both endpoints admitted, at least {need} are needed"
    short = next(c for c in complete if c.reason is not None)
    return (f"{len(usable)} context{'s' if len(usable) != 1 else ''} with endpoints at least the minimum "
            f"separation apart, at least {need} are needed ({short.reason})")
