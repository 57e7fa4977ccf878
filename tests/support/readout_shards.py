"""Image shards for the small synthetic readout bank (`tests.support.readout_service`), so
that its /input tree can be built and a readout program run on it.

One shard per split, 64 x 64 RGB images per camera: the agent view's brightness follows
the coordinate and its top rows the context (or the natural frame), the wrist view the
context alone, with seeded noise. A controlled cell that failed validation gets no image
(`shard` empty), as in the published banks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def add_images(bank: Path, labels: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Write `images-<split>-00.npz` into `bank` and point `observations.parquet` at them;
    `labels` are every split's label rows (`write_bank`'s). Returns the new observations."""
    rng = np.random.default_rng(seed)
    observations = pd.read_parquet(bank / "observations.parquet")
    by_id = labels.set_index("observation_id")
    shards, rows = [], []
    counters: dict[str, int] = {}
    pictures: dict[str, dict[str, list]] = {}
    for oid, split in zip(observations["observation_id"], observations["split"]):
        label = by_id.loc[oid]
        if label["kind"] == "controlled" and not bool(label["admitted"]):
            shards.append("")
            rows.append(-1)
            continue
        name = f"images-{split}-00.npz"
        row = counters.get(name, 0)
        counters[name] = row + 1
        shards.append(name)
        rows.append(row)
        coordinate = float(np.nan_to_num(label["coordinate"]))
        context = int(label["context"])
        agent = rng.integers(0, 20, size=(64, 64, 3)) + int(min(coordinate, 60) * 3)
        agent[:8] += 30 * (context + 1) if context >= 0 else 5 * int(label["frame"])
        wrist = rng.integers(0, 20, size=(64, 64, 3)) + 40 * (context + 1)
        camera = pictures.setdefault(name, {"agentview": [], "wrist": []})
        camera["agentview"].append(np.clip(agent, 0, 255).astype(np.uint8))
        camera["wrist"].append(np.clip(wrist, 0, 255).astype(np.uint8))
    for name, camera in pictures.items():
        np.savez_compressed(bank / name, agentview=np.stack(camera["agentview"]), wrist=np.stack(camera["wrist"]))
    observations = observations.assign(shard=shards, row=rows)
    observations.to_parquet(bank / "observations.parquet", index=False)
    return observations
