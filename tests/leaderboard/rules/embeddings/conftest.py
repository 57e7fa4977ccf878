"""Fixtures of the embedding rules' tests: the sandbox demo's images as arrays."""

import numpy as np
import pytest
from PIL import Image


def _rgb(path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


@pytest.fixture(scope="module")
def demo_images(demo):
    """The demo's scene and library images as RGB arrays, in id order: (query, base)."""
    directory, setting = demo
    query = [_rgb(directory / "scenes" / s / "image.png") for s in setting.scene_ids]
    base = [_rgb(directory / "library" / e / "base.png") for e in setting.experience_ids]
    return query, base
