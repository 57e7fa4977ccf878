"""The downloadable forms of a setting's data, in the formats the field reads.

- outcomes: one row per executed cell, columns `experience_id, scene_id,
  seed, success` (the input format of `expaudit audit`), as Parquet or CSV;
  or NPZ with the int8 tensor `outcomes` (K, Q, S; -1 = not executed) and the
  id arrays.
- scenes: `scene_id, state_id, layout_level, appearance_draw`, as Parquet,
  CSV or JSON.
- experiences: `experience_id` in library order, as Parquet, CSV or JSON.

Bytes are built once per data fingerprint and kept in the object store
(``downloads/<setting>/<fingerprint>/<name>``); on S3 the client is
redirected to a presigned URL, so the bytes never pass through the web
process again.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

from expaudit.errors import UnknownName
from leaderboard.matrix import MISSING, TransferData

OUTCOME_FORMATS = ("parquet", "csv", "npz")
TABLE_FORMATS = ("parquet", "csv", "json")
MEDIA_TYPES = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8",
               "npz": "application/octet-stream", "json": "application/json"}


class UnknownDownload(UnknownName, ValueError):
    """A download or a format of it that is not offered."""


def outcomes_frame(data: TransferData) -> pd.DataFrame:
    """Long table of every executed cell, in library x scene x seed order."""
    k, q, s = data.outcomes.shape
    i, j, seed = np.meshgrid(np.arange(k), np.arange(q), np.arange(s), indexing="ij")
    keep = (data.outcomes != MISSING).ravel()
    return pd.DataFrame({
        "experience_id": np.asarray(data.experience_ids, dtype=object)[i.ravel()[keep]],
        "scene_id": np.asarray(data.scenes.scene_ids, dtype=object)[j.ravel()[keep]],
        "seed": seed.ravel()[keep].astype(np.int64),
        "success": data.outcomes.ravel()[keep].astype(np.int64),
    })


def scenes_frame(data: TransferData) -> pd.DataFrame:
    sc = data.scenes
    return pd.DataFrame({"scene_id": list(sc.scene_ids),
                         "state_id": np.asarray(sc.state_ids).astype(str),
                         "layout_level": np.asarray(sc.layout_level).astype(np.int64),
                         "appearance_draw": np.asarray(sc.appearance_draw).astype(np.int64)})


def experiences_frame(data: TransferData) -> pd.DataFrame:
    return pd.DataFrame({"experience_id": list(data.experience_ids)})


def table_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    if fmt == "csv":
        return frame.to_csv(index=False).encode("utf-8")
    if fmt == "json":
        return json.dumps(frame.to_dict(orient="records")).encode("utf-8")
    raise UnknownDownload(f"format must be one of {TABLE_FORMATS}, got {fmt!r}")


def npz_bytes(data: TransferData) -> bytes:
    buffer = io.BytesIO()
    sc = data.scenes
    np.savez_compressed(buffer, outcomes=np.asarray(data.outcomes, dtype=np.int8),
                        experience_ids=np.asarray(data.experience_ids, dtype=str),
                        scene_ids=np.asarray(sc.scene_ids, dtype=str),
                        state_ids=np.asarray(sc.state_ids).astype(str),
                        layout_level=np.asarray(sc.layout_level, dtype=np.int64),
                        appearance_draw=np.asarray(sc.appearance_draw, dtype=np.int64))
    return buffer.getvalue()


def build(data: TransferData, what: str, fmt: str) -> bytes:
    """The bytes of download `what` (outcomes, scenes, experiences) in format `fmt`."""
    if what == "outcomes":
        return npz_bytes(data) if fmt == "npz" else table_bytes(outcomes_frame(data), fmt)
    if what == "scenes":
        return table_bytes(scenes_frame(data), fmt)
    if what == "experiences":
        return table_bytes(experiences_frame(data), fmt)
    raise UnknownDownload(f"unknown download {what!r}")
