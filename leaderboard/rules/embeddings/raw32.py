"""raw32: the image as 32x32 RGB pixels, compared by L2 distance.

The resize is exactly the example container selector's
(`examples/selectors/raw32/selector.py`): Pillow
`Image.fromarray(rgb).resize((32, 32), Image.BILINEAR)`. `embed` returns the
resized uint8 values as float32 (0-255, exact integers); the score divides
by 255 in float64 and takes `-np.linalg.norm(library - query, axis=1)` per
scene, the same operations as the selector, so both forms give bit-identical
scores.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from leaderboard.rules.embeddings.base import check_images

SIZE = (32, 32)
PREPROCESSING = "raw32: RGB, Pillow resize (32, 32) BILINEAR, uint8 values"


def resize32(image: np.ndarray) -> np.ndarray:
    """(32, 32, 3) uint8 pixels of an (H, W, 3) uint8 image (Pillow bilinear)."""
    from PIL import Image

    return np.asarray(Image.fromarray(image).convert("RGB").resize(SIZE, Image.BILINEAR))


class Raw32Encoder:
    """Weight-free encoder; its content hash covers the preprocessing and Pillow's version.
    Pillow is imported on first use (the core install may lack it).

    A different Pillow release may resample differently, so cached vectors
    are keyed by it too.
    """

    name = "raw32"
    metric = "l2"

    def __init__(self) -> None:
        import PIL

        text = f"{PREPROCESSING}; pillow {PIL.__version__}".encode()
        self.content_hash = "sha256:" + hashlib.sha256(text).hexdigest()

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 3072) float32: each image's resized pixels, 0-255."""
        rows = [resize32(image).reshape(-1) for image in check_images(images)]
        if not rows:
            return np.zeros((0, SIZE[0] * SIZE[1] * 3), dtype=np.float32)
        return np.stack(rows).astype(np.float32)
