"""The transfer data every audit runs on: library order, scene table, outcome tensor.

Shared by the audit engine, the frozen benchmark data and the service, so a
setting loaded from disk, an uploaded CSV and a test fixture are one type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from expaudit.errors import DataNotFound

MISSING = -1
"""Outcome value of a cell that has not been executed yet (int8 tensor)."""


class IncompleteOutcomes(DataNotFound, ValueError):
    """The outcome tensor misses cells that a computation needs (the message says how many)."""


@dataclass(frozen=True)
class SceneTable:
    """Per-scene metadata of AUDIT_SPEC, all arrays of shape (Q,).

    `state_id` is the cluster for every interval; `layout_level` is 0-3 and
    `appearance_draw` 0 means nominal appearance.
    """

    scene_ids: tuple[str, ...]
    state_ids: np.ndarray
    layout_level: np.ndarray
    appearance_draw: np.ndarray

    @property
    def n_scenes(self) -> int:
        return len(self.scene_ids)


@dataclass(frozen=True)
class TransferData:
    """A library, a query set and the outcome tensor between them.

    Attributes
    ----------
    experience_ids : tuple of str, length K, library order (index 0 is the oldest).
    scenes : SceneTable with Q scenes.
    outcomes : int8 array of shape (K, Q, S); 0/1, or `MISSING` where a cell
        was never executed.
    """

    experience_ids: tuple[str, ...]
    scenes: SceneTable
    outcomes: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.outcomes.shape)  # type: ignore[return-value]

    @property
    def is_complete(self) -> bool:
        return bool((self.outcomes != MISSING).all())

    @property
    def n_missing(self) -> int:
        return int((self.outcomes == MISSING).sum())

    def success_matrix(self) -> np.ndarray:
        """y[i, q] = mean success over seeds, shape (K, Q); requires a complete tensor."""
        if not self.is_complete:
            raise IncompleteOutcomes(f"outcome tensor has {self.n_missing} missing cells")
        # integer sums divided by S: the same values as a float mean over seeds, without
        # a float64 copy of the whole (K, Q, S) tensor
        return self.outcomes.sum(axis=2, dtype=np.int64) / self.outcomes.shape[2]
