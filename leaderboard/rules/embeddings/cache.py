"""On-disk cache of embeddings, one file per (model content hash, image content hash).

An image's key is the sha256 of its shape and pixel bytes, so the same
pixels give the same key whatever file they came from. Vectors are stored as
`.npy` (no pickle) under `<directory>/<model hash>/<image hash>.npy`, written
to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from leaderboard.rules.embeddings.base import Encoder, check_images
from leaderboard.rules.embeddings.scoring import nearest_neighbour_scores


def image_hash(image: np.ndarray) -> str:
    """sha256 hex of an image's shape and pixel bytes."""
    digest = hashlib.sha256(repr(image.shape).encode())
    digest.update(np.ascontiguousarray(image).tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """How many vectors came from the cache and how many were computed."""

    hits: int
    misses: int


class EmbeddingCache:
    """A directory of cached vectors; the directory is passed in, never chosen here."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, model_hash: str, key: str) -> Path:
        return self.directory / model_hash.replace(":", "-") / f"{key}.npy"

    def get(self, model_hash: str, key: str) -> np.ndarray | None:
        path = self._path(model_hash, key)
        if not path.exists():
            return None
        return np.load(path, allow_pickle=False)

    def put(self, model_hash: str, key: str, vector: np.ndarray) -> None:
        path = self._path(model_hash, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            np.save(stream, np.asarray(vector, dtype=np.float32), allow_pickle=False)
        os.replace(temp, path)


def embed_cached(encoder: Encoder, images: Sequence[np.ndarray],
                 cache: EmbeddingCache | None) -> tuple[np.ndarray, CacheStats]:
    """Embeddings of `images` (N, D) float32, computing only those not cached.

    Repeated images within one call are embedded once. Without a cache every
    image is computed.
    """
    images = check_images(images)
    if cache is None:
        return encoder.embed(images), CacheStats(0, len(images))
    keys = [image_hash(image) for image in images]
    found = {key: cache.get(encoder.content_hash, key) for key in dict.fromkeys(keys)}
    todo = [key for key, vector in found.items() if vector is None]
    if todo:
        first = {key: images[keys.index(key)] for key in todo}
        vectors = encoder.embed(list(first.values()))
        for key, vector in zip(todo, vectors):
            cache.put(encoder.content_hash, key, vector)
            found[key] = vector
    hits = sum(1 for key in keys if key not in todo)
    out = np.stack([np.asarray(found[key], dtype=np.float32) for key in keys]) if keys else \
        encoder.embed([])
    return out, CacheStats(hits=hits, misses=len(keys) - hits)


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
