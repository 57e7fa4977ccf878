"""A readout program: 8x8 average-pooled pixels of both cameras as each observation's features.

Reads the readout /input tree (docs/readout.md, "A program that computes features") and
writes /output/features.npz: one row per observation of every split it is given, 384
float64 features (2 cameras x 8 x 8 x 3 channels, scaled to 0..1).
"""
import json
import os
from pathlib import Path

import numpy as np


def pooled(images: np.ndarray, size: int = 8) -> np.ndarray:
    """(N, H, W, 3) uint8 -> (N, size * size * 3) block means in 0..1."""
    n, h, w, c = images.shape
    blocks = images.reshape(n, size, h // size, size, w // size, c).astype(np.float64)
    return blocks.mean(axis=(2, 4)).reshape(n, -1) / 255.0


def features(split_npz) -> tuple[np.ndarray, np.ndarray]:
    """(observation ids, features) of one split's image file."""
    with np.load(split_npz, allow_pickle=False) as z:
        return z["observation_id"], np.concatenate([pooled(z["agentview"]), pooled(z["wrist"])], axis=1)


def main() -> None:
    root = Path(os.environ.get("EXPAUDIT_INPUT", "/input"))
    out = Path(os.environ.get("EXPAUDIT_OUTPUT", "/output"))
    setting = json.loads((root / "setting.json").read_text())
    parts = [features(root / "images" / f"{split}.npz") for split in setting["splits"]]
    np.savez(out / "features.npz", observation_id=np.concatenate([p[0] for p in parts]),
             features=np.concatenate([p[1] for p in parts]))


if __name__ == "__main__":
    main()
