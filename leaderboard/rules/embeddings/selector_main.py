"""The container form of an embedding rule: the selector protocol around `embedding_scores`.

Shared by the example selectors under `examples/selectors/<rule>/`, which
call `run(rule)`, so a container's scores are those of the leaderboard's
baseline row for the same images. Each image is decoded with Pillow and
converted to RGB, exactly as the rule reads the stored PNGs; the score of an
experience in a scene is the cosine similarity between the scene's query
image and the experience's base-scene image.

Reads /input and writes /output/scores.csv; EXPAUDIT_INPUT and
EXPAUDIT_OUTPUT move the directories (docs/selector_protocol.md).
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from leaderboard.rules.embeddings import NotComputed, embedding_scores, load_encoder


def rgb(path: Path) -> np.ndarray:
    """The image as an (H, W, 3) uint8 array, decoded as the reference rule decodes it."""
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def run(rule: str) -> int:
    """Score every (scene, experience) pair with `rule`; exit status 2 when it can't be computed."""
    root = Path(os.environ.get("EXPAUDIT_INPUT", "/input"))
    out = Path(os.environ.get("EXPAUDIT_OUTPUT", "/output"))
    encoder = load_encoder(rule)
    if isinstance(encoder, NotComputed):
        sys.stderr.write(f"{rule} selector: {encoder.message}\n")
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
