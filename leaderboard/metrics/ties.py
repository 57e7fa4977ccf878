"""Tie groups of sorted rows: the one sort behind every rank statistic with ties averaged.

Mann-Whitney AUROC (ties count one half) and mid-rank empirical CDFs both
need, for each value, how many values of its row lie strictly below it and
how many equal it. One stable sort per row gives both: tied values are
adjacent, and each position's tie group is found from the first and last
positions of its run. O(n log n) time and O(n) memory per row.
"""

from __future__ import annotations

import numpy as np


def sorted_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, ordered): the stable sorting permutation of each row and the sorted rows."""
    order = np.argsort(values, axis=1, kind="stable")
    return order, np.take_along_axis(values, order, axis=1)


def tie_bounds(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, last): for each position of sorted rows, the first and last position of its tie group.

    Values tie when they compare equal (`==`, so -0.0 ties 0.0).
    """
    n_rows, n_cols = ordered.shape
    starts = np.ones((n_rows, n_cols), dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones((n_rows, n_cols), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    position = np.arange(n_cols)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n_cols - 1)[:, ::-1], axis=1)[:, ::-1]
    return first, last
