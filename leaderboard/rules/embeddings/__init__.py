"""Embedding reference rules: nearest neighbour between query and base-scene images.

One interface (`Encoder`: images in, float32 vectors out), one scoring step
(`embedding_scores` -> (K, Q), higher = nearer) and a content-addressed
cache. torch is imported only when a torch encoder is loaded, so the core
install imports this package without it.
"""

from __future__ import annotations

from leaderboard.rules.embeddings.base import WEIGHTS_MISSING, Encoder, NotComputed
from leaderboard.rules.embeddings.cache import CacheStats, EmbeddingCache, embed_cached, embedding_scores, image_hash
from leaderboard.rules.embeddings.registry import ENCODER_NAMES, WEIGHTS_ENV, load_encoder
from leaderboard.rules.embeddings.scoring import cosine_scores, nearest_neighbour_scores, raw_l2_scores

__all__ = [
    "ENCODER_NAMES", "WEIGHTS_ENV", "WEIGHTS_MISSING", "CacheStats", "Encoder", "EmbeddingCache",
    "NotComputed", "cosine_scores", "embed_cached", "embedding_scores", "image_hash",
    "load_encoder", "nearest_neighbour_scores", "raw_l2_scores",
]
