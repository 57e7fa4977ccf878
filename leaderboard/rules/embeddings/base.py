"""The one interface every image embedding implements, and the typed "not computed" result.

An embedding rule needs only `embed`: images in, one float32 row per image
out. `content_hash` identifies the exact weights (or, for weight-free
encoders, the exact preprocessing), so cached vectors are never reused across
different models. An encoder whose weights are not on the machine is never
replaced by random weights: `load_encoder` returns `NotComputed` instead, and
the rule's row says why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

WEIGHTS_MISSING = "weights missing"
"""Prefix of every reason an encoder with absent weights gives."""


@runtime_checkable
class Encoder(Protocol):
    """An image encoder: `embed(images) -> float32 (N, D)`.

    Attributes
    ----------
    name : the rule name (for example "mobilenet_v2").
    content_hash : "sha256:<hex>" of the weights file (or of the
        preprocessing definition for a weight-free encoder).
    metric : "cosine" or "l2": how nearest-neighbour scores compare vectors.
    """

    name: str
    content_hash: str
    metric: str

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """One float32 row per (H, W, 3) uint8 image, in order."""
        ...


@dataclass(frozen=True)
class NotComputed:
    """An encoder that cannot run here, with the reason shown on its row.

    `reason` starts with "weights missing" when the weights are absent (the
    AUDIT_SPEC wording) and says what to supply.
    """

    name: str
    reason: str

    @property
    def message(self) -> str:
        return f"not computed: {self.reason}"


def file_sha256(path: Path) -> str:
    """"sha256:<hex>" of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def check_images(images: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Validate a batch: each image (H, W, 3) uint8; raises ValueError naming the index."""
    checked = []
    for index, image in enumerate(images):
        array = np.asarray(image)
        if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f"images[{index}]: expected an (H, W, 3) uint8 array, "
                             f"got dtype {array.dtype} and shape {array.shape}")
        checked.append(array)
    return checked
