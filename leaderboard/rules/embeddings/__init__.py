"""Embedding reference rules: nearest neighbour between query and base-scene images.

One interface (`Encoder`: images in, float32 vectors out), one scoring step
(`embedding_scores` -> (K, Q), higher = nearer) and a content-addressed
cache. torch is imported only when a torch encoder is loaded, so the core
install imports this package without it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from leaderboard.rules.embeddings.base import WEIGHTS_MISSING, Encoder, NotComputed
from leaderboard.rules.embeddings.cache import CacheStats, EmbeddingCache, embed_cached, image_hash
from leaderboard.rules.embeddings.registry import ENCODER_NAMES, WEIGHTS_ENV, load_encoder
from leaderboard.rules.embeddings.scoring import cosine_scores, nearest_neighbour_scores, raw_l2_scores

__all__ = [
    "ENCODER_NAMES", "WEIGHTS_ENV", "WEIGHTS_MISSING", "CacheStats", "Encoder", "EmbeddingCache",
    "NotComputed", "cosine_scores", "embed_cached", "embedding_scores", "image_hash",
    "load_encoder", "nearest_neighbour_scores", "raw_l2_scores",
]


def embedding_scores(encoder: Encoder, query_images: Sequence[np.ndarray],
                     base_images: Sequence[np.ndarray],
                     cache: EmbeddingCache | None = None) -> np.ndarray:
    """(K, Q) nearest-neighbour scores: base image i (library order) against query image q.

    Cosine similarity for cosine encoders, minus the L2 distance for raw32;
    vectors come from `cache` when it holds them.
    """
    query, _ = embed_cached(encoder, query_images, cache)
    base, _ = embed_cached(encoder, base_images, cache)
    return nearest_neighbour_scores(encoder.metric, query, base)
