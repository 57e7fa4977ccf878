"""Fixtures of the readout engine's tests: hand-made controlled grids."""

import numpy as np
import pytest

TARGETS = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0)
"""The hand grids' six target coordinates (the actual coordinate unless a test adds drift)."""


@pytest.fixture
def make_grid():
    """Build a `ControlledGrid` from `predict(context, q)` over TARGETS x contexts.

    `drop` removes (context, grid_index) cells (not admitted); `drift` maps a cell to an
    added offset of its actual coordinate.
    """
    from leaderboard.readout.grid import ControlledGrid

    def build(predict, contexts=(0, 1, 2, 3), drop=(), drift=None):
        rows = [(c, g, TARGETS[g] + (drift or {}).get((c, g), 0.0))
                for c in contexts for g in range(len(TARGETS)) if (c, g) not in set(drop)]
        context = np.array([r[0] for r in rows], dtype=np.int64)
        index = np.array([r[1] for r in rows], dtype=np.int64)
        q = np.array([r[2] for r in rows], dtype=np.float64)
        p = np.array([predict(c, v) for c, _, v in rows], dtype=np.float64)
        return ControlledGrid(context, index, q, p)

    return build
