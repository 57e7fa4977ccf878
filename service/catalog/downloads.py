"""The downloadable forms of a setting's data, in the formats the field reads.

- outcomes: one row per executed cell, columns `experience_id, scene_id,
  seed, success` (the input format of `expaudit audit`), as Parquet or CSV;
  or NPZ with the int8 tensor `outcomes` (K, Q, S; -1 = not executed) and the
  id arrays.
- scenes: `scene_id, state_id, layout_level, appearance_draw`, as Parquet,
  CSV or JSON.
- experiences: `experience_id` in library order, as Parquet, CSV or JSON.

Parquet files carry `metadata` (the setting, data version and licence:
`benchmark_data.downloads.describe`) in their key-value metadata; NPZ files
hold the same as a JSON string, `metadata`. Bytes are built once per data
fingerprint and kept in the object store
(``downloads/<setting>/<fingerprint>/v<format version>/<name>``); on S3 the
client is redirected to a presigned URL, so the bytes never pass through the
web process again.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

from benchmark_data.downloads import Download, offered, parquet_bytes
from expaudit.errors import UnknownName
from leaderboard.matrix import MISSING, TransferData

OUTCOME_FORMATS = ("parquet", "csv", "npz")
TABLE_FORMATS = ("parquet", "csv", "json")
ARCHIVE_ROUTE = "archives/"
"""Route prefix of the downloads served from a frozen file (`Catalog.archive_path` kinds)."""
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


def table_bytes(frame: pd.DataFrame, fmt: str, metadata: dict[str, str] | None = None) -> bytes:
    if fmt == "parquet":
        return parquet_bytes(frame, metadata or {})
    if fmt == "csv":
        return frame.to_csv(index=False).encode("utf-8")
    if fmt == "json":
        return json.dumps(frame.to_dict(orient="records")).encode("utf-8")
    raise UnknownDownload(f"format must be one of {TABLE_FORMATS}, got {fmt!r}")


def npz_bytes(data: TransferData, metadata: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    sc = data.scenes
    np.savez_compressed(buffer, metadata=np.asarray(json.dumps(metadata or {}, sort_keys=True)),
                        outcomes=np.asarray(data.outcomes, dtype=np.int8),
                        experience_ids=np.asarray(data.experience_ids, dtype=str),
                        scene_ids=np.asarray(sc.scene_ids, dtype=str),
                        state_ids=np.asarray(sc.state_ids).astype(str),
                        layout_level=np.asarray(sc.layout_level, dtype=np.int64),
                        appearance_draw=np.asarray(sc.appearance_draw, dtype=np.int64))
    return buffer.getvalue()


def build(data: TransferData, what: str, fmt: str, metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of download `what` (outcomes, scenes, experiences) in format `fmt`, describing
    itself with `metadata` where the format can hold it (Parquet, NPZ)."""
    if what == "outcomes":
        return (npz_bytes(data, metadata) if fmt == "npz"
                else table_bytes(outcomes_frame(data), fmt, metadata))
    if what == "scenes":
        return table_bytes(scenes_frame(data), fmt, metadata)
    if what == "experiences":
        return table_bytes(experiences_frame(data), fmt, metadata)
    raise UnknownDownload(f"unknown download {what!r}")


def offered_downloads(catalog, setting_id: str) -> list[Download]:
    """The downloads `catalog` serves for a setting: `benchmark_data.downloads.offered`, less
    an archive the catalog's data lacks (a catalog of plain score tables has none)."""
    setting = catalog.get_setting(setting_id)
    return [d for d in offered(setting, catalog.supports_selectors(setting_id))
            if not d.route.startswith(ARCHIVE_ROUTE)
            or catalog.archive_path(setting_id, d.route[len(ARCHIVE_ROUTE):]) is not None]
