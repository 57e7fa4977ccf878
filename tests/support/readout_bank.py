"""A small synthetic readout bank in the bank files' format (docs/readout.md), for tests.

One task ("door", degrees), train/dev/confirm/eval initializations, one expert episode of 8
natural frames and a 6 x 4 controlled grid per initialization. The `weak` features follow
the coordinate only 0.3 and the arm 0.7: on natural frames the arm moves with the
coordinate, so the readout is accurate there and barely responsive on the grid. The
`perfect` predictions are the true coordinates.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark_data.generation import readout_features as rf

TARGETS = np.array([0.0, 10.0, 20.0, 30.0, 40.0, 50.0])
COUNTS = {"train": 8, "dev": 8, "confirm": 6, "eval": 10}
POLICY = "door-bc"
NOT_ADMITTED = {(0, 3, 2), (1, 0, 5), (1, 1, 5), (1, 2, 5)}
"""Confirm cells (initialization index, context, grid index) that fail validation: an interior
cell of confirm-0, and the last endpoint of three contexts of confirm-1 (not estimable)."""
SMALL = 4
"""The estimability gate for this bank (6 confirm initializations, 5 estimable)."""


def write_bank(root: Path, seed: int = 0) -> dict:
    """Write bank/, sealed-labels.parquet, weak.parquet, weak-shards/ and perfect.csv under `root`."""
    rng = np.random.default_rng(seed)
    labels, features, counter = [], [], 0
    for split, n in COUNTS.items():
        for i in range(n):
            init = f"{split}-{i}"
            start = rng.uniform(0, 5)
            for frame in range(8):
                y = start + 6.0 * frame
                counter += 1
                labels.append({"observation_id": f"o{counter:05d}", "coordinate": y, "kind": "natural",
                               "initialization": init, "split": split, "source": "expert", "episode": 0,
                               "frame": frame, "gripper_distance": 100 - 10 * frame + rng.normal(),
                               "context": -1, "grid_index": -1, "admitted": False})
                features.append(_features(rng, y, y + rng.normal()))
            for context in range(4):
                for g, target in enumerate(TARGETS):
                    counter += 1
                    admitted = not (split == "confirm" and (i, context, g) in NOT_ADMITTED)
                    q = target + rng.normal(scale=0.3)
                    labels.append({"observation_id": f"o{counter:05d}", "coordinate": q if admitted else np.nan,
                                   "kind": "controlled", "initialization": init, "split": split, "source": "",
                                   "episode": -1, "frame": -1, "gripper_distance": np.nan, "context": context,
                                   "grid_index": g, "admitted": admitted})
                    features.append(_features(rng, q, 12.0 * context + 5.0))
    frame = pd.DataFrame(labels)
    bank = root / "bank"
    bank.mkdir(parents=True)
    (bank / "bank.json").write_text(json.dumps({"task": "door", "version": "v1", "coordinate": "hinge angle",
                                                 "unit": "deg", "min_endpoint_separation": 5.0, "grid_size": 6,
                                                 "contexts": 4}))
    frame[["observation_id", "split", "initialization", "kind"]].assign(shard="images-00.npz", row=0) \
        .to_parquet(bank / "observations.parquet", index=False)
    sealed = frame["split"].isin(["confirm", "eval"])
    frame[~sealed].to_parquet(bank / "labels.parquet", index=False)
    frame[sealed].to_parquet(root / "sealed-labels.parquet", index=False)
    runs = [{"policy": POLICY, "initialization": f"{split}-{i}", "seed": s, "success": bool(rng.uniform() < 0.5),
             "code_version": "test"}
            for split in ("dev", "eval") for i in range(COUNTS[split]) for s in (0, 1)]
    pd.DataFrame(runs).to_parquet(bank / "outcomes.parquet", index=False)
    values = np.array(features)
    weak = pd.DataFrame(values, columns=[f"f{j}" for j in range(values.shape[1])])
    weak.insert(0, "observation_id", frame["observation_id"])
    weak.to_parquet(root / "weak.parquet", index=False)
    shards = root / "weak-shards"
    shards.mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(frame)), 2)):
        np.savez(shards / f"features-{k:02d}.npz", observation_id=frame["observation_id"].to_numpy(dtype=str)[part],
                 features=values[part].astype(np.float32))
    admitted = (frame["kind"] == "natural") | frame["admitted"]
    frame.loc[admitted, ["observation_id", "coordinate"]].rename(columns={"coordinate": "prediction"}) \
        .to_csv(root / "perfect.csv", index=False)
    return {"bank": bank, "sealed": root / "sealed-labels.parquet", "weak": root / "weak.parquet",
            "weak_shards": shards, "perfect": root / "perfect.csv", "labels": frame}


def _features(rng, coordinate: float, arm: float) -> list[float]:
    return [0.3 * coordinate + 0.7 * arm + rng.normal(scale=0.2), rng.normal(), 1.0]


def _task_bank(made: dict, task: str, root):
    bank = rf.bank_dir(task, root)
    bank.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(made["bank"], bank)
    info = json.loads((bank / "bank.json").read_text())
    (bank / "bank.json").write_text(json.dumps({**info, "task": task}))
    for name in ("raw32", f"policy_dr/{task}-e000"):
        out = rf.features_dir(task, name, root)
        shutil.copytree(made["weak_shards"], out)
        (out / rf.FEATURES_JSON).write_text(json.dumps({
            "representation": name, "status": rf.COMPUTED, "complete": True, "content_hash": f"sha256:{name}",
            "code_version": rf.CODE_VERSION, "dtype": "float32", "views": "agentview", "dimension": 3,
            "rows": 1}))
    out = rf.features_dir(task, "mobilenet_v2", root)
    out.mkdir(parents=True)
    (out / rf.FEATURES_JSON).write_text(json.dumps({"representation": "mobilenet_v2", "status": rf.NOT_COMPUTED,
                                                    "reason": "weights missing: install the wheel"}))


def reference_root(tmp_path: Path) -> tuple[Path, dict]:
    """A frozen root whose every readout task publishes this bank, with two representations'
    features computed and one not; the root and each task's sealed labels."""
    made = write_bank(tmp_path / "made")
    root = tmp_path / "root"
    for task in rf.TASKS:
        _task_bank(made, task, root)
    return root, {task: made["sealed"] for task in rf.TASKS}
