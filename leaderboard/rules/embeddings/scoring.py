"""Nearest-neighbour scores between query images and base-scene images: a (K, Q) matrix.

Higher is preferred, as the audit expects. Cosine rules score the cosine
similarity (so the nearest base scene in cosine distance scores highest);
the raw32 rule scores minus the L2 distance of pixel values in [0, 1],
computed with the same numpy operations as the raw32 container selector.
"""

from __future__ import annotations

import numpy as np

RAW_PIXEL_SCALE = 255.0


def _check_pair(query: np.ndarray, base: np.ndarray) -> None:
    if query.ndim != 2 or base.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (N, D); got query {query.shape}, base {base.shape}")
    if query.shape[1] != base.shape[1]:
        raise ValueError(f"embedding widths differ: query D={query.shape[1]}, base D={base.shape[1]}")


def cosine_scores(query: np.ndarray, base: np.ndarray) -> np.ndarray:
    """(K, Q) cosine similarity between base row i and query row q (float64).

    A zero vector has no direction: it raises ValueError naming the row
    rather than producing NaN.
    """
    query = np.asarray(query, dtype=np.float64)
    base = np.asarray(base, dtype=np.float64)
    _check_pair(query, base)
    for label, matrix in (("query", query), ("base", base)):
        norms = np.linalg.norm(matrix, axis=1)
        if (norms == 0).any():
            raise ValueError(f"{label} embedding row {int(np.flatnonzero(norms == 0)[0])} is all zeros")
    q_unit = query / np.linalg.norm(query, axis=1, keepdims=True)
    b_unit = base / np.linalg.norm(base, axis=1, keepdims=True)
    return b_unit @ q_unit.T


def raw_l2_scores(query: np.ndarray, base: np.ndarray) -> np.ndarray:
    """(K, Q) minus the L2 distance of raw32 pixel vectors scaled to [0, 1].

    One scene at a time, `-np.linalg.norm(library - query, axis=1)`, exactly
    as the container selector computes it (float64 of uint8 / 255).
    """
    query = np.asarray(query, dtype=np.float64) / RAW_PIXEL_SCALE
    library = np.asarray(base, dtype=np.float64) / RAW_PIXEL_SCALE
    _check_pair(query, library)
    scores = np.empty((library.shape[0], query.shape[0]))
    for q, row in enumerate(query):
        scores[:, q] = -np.linalg.norm(library - row, axis=1)
    return scores


def nearest_neighbour_scores(metric: str, query: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Dispatch on the encoder's metric ("cosine" or "l2")."""
    if metric == "cosine":
        return cosine_scores(query, base)
    if metric == "l2":
        return raw_l2_scores(query, base)
    raise ValueError(f"metric must be 'cosine' or 'l2', got {metric!r}")
