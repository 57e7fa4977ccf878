"""The readout program protocol: the /input tree of a readout setting and the features it writes.

A readout program (docs/readout.md, "A program that computes features") reads the
observation images of `train`, `dev` and `confirm` and the public labels of `train` and
`dev` from /input, and writes one feature vector per observation to /output. The tree is
written here from arrays the service hands over (this package reads no frozen data); the
features are read back through the service's one reader of readout uploads
(`leaderboard.readout.upload.read_upload`), so a program's features and an uploaded file
pass the same checks and give the same numbers. No label of a sealed split is ever
written: `prepare_readout_input` refuses a label row of any other split.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.readout.inputs import Representation
from leaderboard.readout.upload import read_upload
from sandbox import defaults
from sandbox.protocol import ProtocolError, read_output_file

PROTOCOL_VERSION = 1
"""Version of the readout /input layout, written into setting.json."""
IMAGE_SPLITS = ("train", "dev", "confirm")
"""The splits whose images a program is given: the readout's fit, the choices, the reported numbers."""
LABEL_SPLITS = ("train", "dev")
"""The only splits whose labels enter /input (confirm's and eval's are sealed)."""
CAMERAS = ("agentview", "wrist")
OBSERVATION_COLUMNS = ("observation_id", "split", "initialization", "kind")
LABEL_COLUMNS = ("observation_id", "split", "initialization", "kind", "coordinate", "episode", "frame",
                 "context", "grid_index", "admitted")
"""The columns of labels.csv (those the bank has, in this order)."""
FEATURES_FILES = {"features.npz": "npz", "features.parquet": "parquet"}
"""What a program may write (exactly one of them), and its format."""
FEATURES_BYTES = defaults.OUTPUT_BYTES
"""Largest features file read back: the whole /output cap (float32 features of every
observation of the largest bank, 4096 wide, are about 54 MB)."""
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
"""Zip member time: the tree's bytes depend on its content only (its version is their hash)."""


@dataclass(frozen=True)
class SplitImages:
    """One split's observations with an image, in the bank's order: ids (N,), and per camera
    (N, H, W, 3) uint8."""

    observation_ids: np.ndarray
    cameras: Mapping[str, np.ndarray]


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o644)


def _npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed NPZ with fixed member times (`numpy.savez` stamps the clock)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_FIXED_TIME), member.getvalue())
    return buffer.getvalue()


def prepare_readout_input(directory: Path, setting: Mapping[str, object], images: Mapping[str, SplitImages],
                          labels: pd.DataFrame) -> Path:
    """Write a readout setting's /input tree into `directory` (created; must be absent or empty).

    `setting`: `setting_id`, `task`, `coordinate`, `unit` (written to setting.json with the
    layout); `images`: each of `IMAGE_SPLITS`; `labels`: the public label rows. Files are
    0644 and directories 0755 (the program runs as an unprivileged uid).

    Raises
    ------
    ProtocolError : a split missing, a label row of a sealed split, an observation id that
        repeats, or images that are not uint8 (N, H, W, 3) aligned with the ids.
    """
    directory = Path(directory)
    missing = [s for s in IMAGE_SPLITS if s not in images]
    if missing:
        raise ProtocolError(f"field 'images': no images of split(s) {missing}")
    sealed = sorted(set(labels["split"].astype(str)) - set(LABEL_SPLITS))
    if sealed:
        raise ProtocolError(f"field 'labels.split': value {sealed[0]!r} is sealed; only "
                            f"{list(LABEL_SPLITS)} labels may be given to a program")
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise ProtocolError(f"input directory '{directory}' is not empty")
    directory.chmod(0o755)
    (directory / "images").mkdir()
    (directory / "images").chmod(0o755)
    rows, seen, shape = [], set(), None
    for split in IMAGE_SPLITS:
        part = images[split]
        ids = np.asarray(part.observation_ids, dtype=str)
        for camera in CAMERAS:
            array = np.asarray(part.cameras[camera])
            if array.dtype != np.uint8 or array.ndim != 4 or array.shape[0] != len(ids) or array.shape[3] != 3:
                raise ProtocolError(f"field 'images.{split}.{camera}': shape {array.shape} dtype {array.dtype} "
                                    f"is not uint8 ({len(ids)}, H, W, 3)")
            shape = list(array.shape[1:])
        repeated = seen.intersection(ids.tolist()) or (len(set(ids.tolist())) != len(ids))
        if repeated:
            raise ProtocolError(f"field 'images.{split}.observation_id': an observation id repeats")
        seen.update(ids.tolist())
        _write(directory / "images" / f"{split}.npz",
               _npz({"observation_id": ids, **{c: part.cameras[c] for c in CAMERAS}}))
        rows.append(ids)
    columns = [c for c in LABEL_COLUMNS if c in labels.columns]
    _write(directory / "labels.csv", labels[columns].to_csv(index=False, lineterminator="\n").encode())
    info = {"protocol_version": PROTOCOL_VERSION, "kind": "readout",
            **{k: setting.get(k) for k in ("setting_id", "task", "coordinate", "unit")},
            "splits": list(IMAGE_SPLITS), "label_splits": list(LABEL_SPLITS), "cameras": list(CAMERAS),
            "image_shape": shape, "counts": {s: int(len(r)) for s, r in zip(IMAGE_SPLITS, rows)},
            "output": "features.npz"}
    _write(directory / "setting.json", json.dumps(info, indent=1).encode())
    return directory


def input_observations(directory: Path) -> pd.DataFrame:
    """The observations of a readout /input tree, as the features reader needs them
    (`observation_id`, `split`, `kind`, `shard`): every id of `images/<split>.npz`, with the
    kind labels.csv gives (train and dev; "unlabelled" for confirm, whose rows the reader
    requires whatever their kind). For trying a program on a downloaded tree: the service
    checks against the whole bank, whose ids are these and those of `eval`."""
    directory = Path(directory)
    try:
        setting = json.loads((directory / "setting.json").read_text())
        labels = pd.read_csv(directory / "labels.csv", usecols=["observation_id", "kind"], dtype=str)
        parts = []
        for split in setting["splits"]:
            with np.load(directory / "images" / f"{split}.npz", allow_pickle=False) as archive:
                ids = archive["observation_id"].astype(str)
            parts.append(pd.DataFrame({"observation_id": ids, "split": split,
                                       "shard": f"images/{split}.npz"}))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"'{directory}' is not a readout /input tree: {exc}") from None
    frame = pd.concat(parts, ignore_index=True)
    kinds = dict(zip(labels["observation_id"], labels["kind"]))
    return frame.assign(kind=[kinds.get(i, "unlabelled") for i in frame["observation_id"]])


def read_features_output(directory: Path, observations: pd.DataFrame, name: str, *,
                         max_bytes: int = FEATURES_BYTES) -> Representation:
    """The features a program wrote (`features.npz` or `features.parquet` in `directory`),
    checked like an uploaded features file against the bank's public `observations`.

    Raises `leaderboard.errors.InputError` (source "/output/features.npz" or
    ".parquet") for no file or two, a link, a special or oversize file, and every problem
    the upload reader finds (line, field and value).
    """
    present = [f for f in FEATURES_FILES if (Path(directory) / f).exists() or (Path(directory) / f).is_symlink()]
    if len(present) > 1:
        raise InputError("/output", "holds both features.npz and features.parquet; write one")
    filename = present[0] if present else "features.npz"
    source = f"/output/{filename}"
    data = read_output_file(Path(directory) / filename, source, max_bytes,
                            missing="the program wrote no features file (features.npz or features.parquet)")
    return read_upload(data, FEATURES_FILES[filename], source, "features", observations, name)
