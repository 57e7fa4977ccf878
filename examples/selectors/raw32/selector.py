"""raw32: nearest neighbour in raw pixels.

Every image (query and base scene) is converted to RGB, resized to 32x32 with
Pillow's bilinear filter, `Image.resize((32, 32), Image.BILINEAR)`, and read
as a float64 vector of 3072 values in [0, 1] (uint8 / 255). The score of an
experience in a scene is minus the Euclidean (L2) distance between the two
vectors, so the nearest base scene scores highest.

Reads the selector protocol's /input and writes /output/scores.csv; the
directories can be moved with EXPAUDIT_INPUT and EXPAUDIT_OUTPUT. Needs
numpy and Pillow only.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
from PIL import Image

SIZE = (32, 32)


def pixels(path: Path) -> np.ndarray:
    """The image as a (3072,) float64 vector in [0, 1]."""
    with Image.open(path) as image:
        small = image.convert("RGB").resize(SIZE, Image.BILINEAR)
    return np.asarray(small, dtype=np.float64).reshape(-1) / 255.0


def main() -> None:
    root = Path(os.environ.get("EXPAUDIT_INPUT", "/input"))
    out = Path(os.environ.get("EXPAUDIT_OUTPUT", "/output"))
    setting = json.loads((root / "setting.json").read_text())
    library = np.stack([pixels(root / "library" / e / "base.png")
                        for e in setting["experience_ids"]])
    with open(out / "scores.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scene_id", "experience_id", "score"])
        for scene_id in setting["scene_ids"]:
            query = pixels(root / "scenes" / scene_id / "image.png")
            distances = np.linalg.norm(library - query, axis=1)
            for experience_id, distance in zip(setting["experience_ids"], distances):
                writer.writerow([scene_id, experience_id, repr(-float(distance))])


if __name__ == "__main__":
    main()
