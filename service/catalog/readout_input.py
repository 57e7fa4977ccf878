"""The /input tree of a readout setting: what a readout program is given (docs/readout.md).

Built from the bank of the frozen root alone: the observation images of `train`, `dev`
and `confirm` (from the bank's image shards, in the order of `observations.parquet`) and
the public labels of `train` and `dev` (`labels.parquet`). The sealed labels are never
opened here. The program job and `GET /settings/<id>/selector-input` both call
`prepare_readout_setting_input`, so the tree served is the tree a program runs on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sandbox.readout_protocol import CAMERAS, IMAGE_SPLITS, LABEL_SPLITS, SplitImages, prepare_readout_input
from service.catalog.readout import ReadoutCatalog


def with_images(observations: pd.DataFrame) -> pd.DataFrame:
    """The observations that have an image (a controlled cell that failed validation has none)."""
    shard = observations["shard"]
    return observations[shard.notna().to_numpy() & (shard.astype(str).to_numpy() != "")]


def _split_images(bank: Path, rows: pd.DataFrame) -> SplitImages:
    ids = rows["observation_id"].to_numpy(dtype=str)
    out = {camera: [None] * len(rows) for camera in CAMERAS}
    positions = np.arange(len(rows))
    for shard, group in rows.assign(_at=positions).groupby("shard", sort=True):
        with np.load(bank / str(shard), allow_pickle=False) as archive:
            arrays = {camera: archive[camera] for camera in CAMERAS}
        for at, row in zip(group["_at"].to_numpy(), group["row"].to_numpy(dtype=int)):
            for camera in CAMERAS:
                out[camera][at] = arrays[camera][row]
    cameras = {c: np.stack(v) if v else np.zeros((0, 64, 64, 3), np.uint8) for c, v in out.items()}
    return SplitImages(ids, cameras)


def prepare_readout_setting_input(catalog: ReadoutCatalog, setting_id: str, directory: Path) -> dict:
    """Write readout setting `setting_id`'s /input tree into `directory`; returns setting.json's fields."""
    setting = catalog.get_setting(setting_id)
    info = setting.info()
    observations = with_images(catalog.observations(setting_id))
    images = {split: _split_images(setting.bank, observations[observations["split"] == split])
              for split in IMAGE_SPLITS}
    labels = pd.read_parquet(setting.bank / "labels.parquet")
    labels = labels[labels["split"].isin(LABEL_SPLITS)]
    fields = {"setting_id": setting_id, "task": setting.task, "coordinate": info.get("coordinate"),
              "unit": info.get("unit")}
    prepare_readout_input(directory, fields, images, labels)
    return fields
