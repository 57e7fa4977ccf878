"""Reader of the readout banks: observations, labels, images, bank.json (docs/readout.md, "Files").

A bank is `frozen/readout/<task>-<version>/` (`BANKS`: version 1, the expert's natural frames;
version 2, the published policies' frames added and new sealed splits, docs/readout_protocol.md): `observations.parquet` (every split, public),
`labels.parquet` (train and dev), image shards `images-<split>-NN.npz` and `bank.json`.
The labels of `confirm` and `eval` are sealed: they live in the sealed directory
(`EXPAUDIT_READOUT_SEALED`, default `var/readout_sealed/` of the source tree), never in the
frozen root, and are read only when that file's sha256 matches the one in `bank.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark_data.paths import root_or_default
from expaudit.errors import DataNotFound, InvalidInput

BANK_VERSION = "v1"
"""The default bank version of a reader called without one."""
BANKS = ("v1", "v2")
TASKS = ("door", "stack")
PUBLIC_SPLITS = ("train", "dev")
SEALED_SPLITS = ("confirm", "eval")
OBSERVATION_COLUMNS = ["observation_id", "task", "split", "initialization", "kind", "shard", "row"]
"""Columns of `observations.parquet`."""
LABEL_COLUMNS = ["observation_id", "coordinate", "kind", "initialization", "split", "source", "episode",
                 "frame", "context", "grid_index", "target", "admitted", "reject_reason", "drift",
                 "max_object_speed", "max_joint_speed", "contact", "visible", "visible_px",
                 "penetration_mm", "gripper_distance", "context_step", "context_screened", "layout_level",
                 "state_hash"]
"""Columns of the label tables (public and sealed): the contract's, then the measured pixels and
penetration, the end effector's distance to the target point (m), the context's trajectory
step and whether it passed screening, the layout level and the simulator state hash."""
SEALED_ENV = "EXPAUDIT_READOUT_SEALED"


def bank_dir(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    """`<root>/readout/<task>-<bank>/`."""
    if task not in TASKS:
        raise InvalidInput(f"task must be one of {TASKS}, got {task!r}")
    if bank not in BANKS:
        raise InvalidInput(f"bank must be one of {BANKS}, got {bank!r}")
    return root_or_default(root) / "readout" / f"{task}-{bank}"


def sealed_dir() -> Path:
    """The sealed directory: `EXPAUDIT_READOUT_SEALED`, else `var/readout_sealed/` of the tree."""
    env = os.environ.get(SEALED_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[1] / "var" / "readout_sealed"


def sealed_labels_path(task: str, sealed: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    return Path(sealed or sealed_dir()) / f"{task}-{bank}-labels.parquet"


def read_bank(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> dict:
    """`bank.json` of a task's bank."""
    return json.loads((bank_dir(task, root, bank) / "bank.json").read_text())


def read_observations(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> pd.DataFrame:
    return pd.read_parquet(bank_dir(task, root, bank) / "observations.parquet")


def read_labels(task: str, root: str | Path | None = None, *, sealed: str | Path | None = None,
                include_sealed: bool = False, bank: str = BANK_VERSION) -> pd.DataFrame:
    """Labels of train and dev; with `include_sealed`, also confirm and eval from the sealed
    directory, checked against `bank.json`'s sha256 (a mismatch or absence is an error)."""
    frames = [pd.read_parquet(bank_dir(task, root, bank) / "labels.parquet")]
    if include_sealed:
        path = sealed_labels_path(task, sealed, bank)
        expected = read_bank(task, root, bank).get("sealed_labels_sha256")
        if not path.is_file():
            raise DataNotFound(f"sealed labels of {task!r} are not at {path.name} in the sealed "
                               f"directory")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != expected:
            raise InvalidInput(f"sealed labels {path.name}: sha256 differs from bank.json's "
                               "sealed_labels_sha256")
        frames.append(pd.read_parquet(path))
    return pd.concat(frames, ignore_index=True)


def read_images(task: str, observation_ids, root: str | Path | None = None,
                bank: str = BANK_VERSION) -> dict[str, np.ndarray]:
    """Agent and wrist images (N, 64, 64, 3) uint8 of the given observations, in their order."""
    obs = read_observations(task, root, bank).set_index("observation_id")
    ids = list(observation_ids)
    missing = [i for i in ids if i not in obs.index or not obs.at[i, "shard"]]
    if missing:
        raise InvalidInput(f"no image for observation ids {missing[:5]}")
    out = {"agentview": [None] * len(ids), "wrist": [None] * len(ids)}
    base = bank_dir(task, root, bank)
    by_shard: dict[str, list[int]] = {}
    for k, i in enumerate(ids):
        by_shard.setdefault(obs.at[i, "shard"], []).append(k)
    for shard, positions in by_shard.items():
        with np.load(base / shard) as z:
            agent, wrist = z["agentview"], z["wrist"]
            for k in positions:
                row = int(obs.at[ids[k], "row"])
                out["agentview"][k], out["wrist"][k] = agent[row], wrist[row]
    return {name: np.stack(v) if v else np.zeros((0, 64, 64, 3), np.uint8) for name, v in out.items()}
