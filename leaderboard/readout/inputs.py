"""Read a representation's submitted rows: features or predictions per observation id.

- features: Parquet with `observation_id` and `f0 .. f{D-1}`; an NPZ file with arrays
  `observation_id` (N,) and `features` (N, D); or a directory of `features-*.npz` shards of
  that layout (the reference representations' storage);
- predictions: Parquet or CSV with `observation_id` and `prediction` (the coordinate in the
  task's units), or an NPZ with arrays `observation_id` and `prediction`.

NPZ files are opened without pickle. Every problem raises `InputError` naming the file, the
row (line = row + 2, as for tables), the field and the value.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.io_cells import FIRST_DATA_LINE, read_table

FEATURE_SHARDS = "features-*.npz"
KINDS = ("features", "predictions")


@dataclass(frozen=True)
class Representation:
    """One representation's rows: `values` is (N, D) features or (N,) predictions."""

    name: str
    kind: str
    ids: np.ndarray
    values: np.ndarray
    source: str


def _error(source, message, row=None, field=None, value=None) -> InputError:
    line = None if row is None else int(row) + FIRST_DATA_LINE
    return InputError(str(source), message, line=line, field=field, value=value)


def _load_npz(path: Path, arrays: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            for name in arrays:
                if name not in data.files:
                    raise _error(path, f"missing array (expected: {', '.join(arrays)})", field=name)
            return data[arrays[0]], data[arrays[1]]
    except InputError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise _error(path, f"cannot be read as NPZ without pickle: {exc}") from None


def _ids(values: np.ndarray, source) -> np.ndarray:
    ids = np.asarray(values)
    if ids.ndim != 1 or ids.dtype.kind not in "UO":
        raise _error(source, f"must be a 1-d array of strings, got {ids.dtype} {ids.shape}", field="observation_id")
    out = ids.astype(str) if ids.dtype.kind == "U" else ids
    for row, value in enumerate(out):
        if not isinstance(value, str) or value == "":
            raise _error(source, "must be a non-empty string", row, "observation_id", value)
    return np.asarray(out, dtype=str)


def _finite(values: np.ndarray, source, field_of) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise _error(source, "must hold numbers", field=field_of(0)) from None
    bad = ~np.isfinite(x)
    if bad.any():
        row, *rest = np.argwhere(bad)[0]
        column = rest[0] if rest else 0
        raise _error(source, "is not a finite number", row, field_of(column), x[tuple(np.argwhere(bad)[0])])
    return x


def _unique(ids: np.ndarray, source) -> None:
    _, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        seen = set()
        for row, value in enumerate(ids):
            if value in seen:
                raise _error(source, "appears twice", row, "observation_id", value)
            seen.add(value)


def _feature_table(path: Path) -> tuple[np.ndarray, np.ndarray]:
    frame = read_table(path)
    if "observation_id" not in frame.columns:
        raise _error(path, "missing column", field="observation_id")
    names = [str(c) for c in frame.columns if c != "observation_id"]
    expected = [f"f{i}" for i in range(len(names))]
    if not names or names != expected:
        wrong = next((n for n, e in zip(names, expected) if n != e), None)
        raise _error(path, "feature columns must be f0, f1, ... in order", field="header",
                     value=wrong if wrong is not None else "(no feature column)")
    values = frame[names]
    if path.suffix.lower() == ".csv":
        values = values.apply(pd.to_numeric, errors="coerce")
    return frame["observation_id"].to_numpy(dtype=object), values.to_numpy(dtype=np.float64, na_value=np.nan)


def read_features(path, name: str) -> Representation:
    """One representation's features, from a table, an NPZ file or a directory of NPZ shards."""
    path = Path(path)
    if path.is_dir():
        shards = sorted(path.glob(FEATURE_SHARDS))
        if not shards:
            raise _error(path, f"holds no {FEATURE_SHARDS} shard")
        parts = [_npz_features(shard) for shard in shards]
        widths = {p[1].shape[1] for p in parts}
        if len(widths) != 1:
            raise _error(path, f"shards disagree on the feature width: {sorted(widths)}")
        ids = np.concatenate([p[0] for p in parts])
        values = np.concatenate([p[1] for p in parts])
        _unique(ids, path)
        return Representation(name, "features", ids, values, str(path))
    if path.suffix.lower() == ".npz":
        ids, values = _npz_features(path)
    elif not path.exists():
        raise _error(path, "file not found")
    else:
        raw_ids, raw = _feature_table(path)
        ids, values = _ids(raw_ids, path), _finite(raw, path, lambda c: f"f{c}")
    _unique(ids, path)
    return Representation(name, "features", ids, values, str(path))


def _npz_features(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise _error(path, "file not found")
    raw_ids, raw = _load_npz(path, ("observation_id", "features"))
    ids = _ids(raw_ids, path)
    if raw.ndim != 2 or raw.shape[0] != len(ids):
        raise _error(path, f"must be (N, D) with N = {len(ids)} observation ids, got {raw.shape}", field="features")
    return ids, _finite(raw, path, lambda c: f"features[:, {c}]")


def read_predictions(path, name: str) -> Representation:
    """One representation's predictions (the coordinate per observation id)."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        if not path.is_file():
            raise _error(path, "file not found")
        raw_ids, raw = _load_npz(path, ("observation_id", "prediction"))
        ids = _ids(raw_ids, path)
        if raw.ndim != 1 or raw.shape[0] != len(ids):
            raise _error(path, f"must be (N,) with N = {len(ids)} observation ids, got {raw.shape}", field="prediction")
    else:
        frame = read_table(path)
        for column in ("observation_id", "prediction"):
            if column not in frame.columns:
                raise _error(path, "missing column (expected: observation_id, prediction)", field=column)
        extra = [str(c) for c in frame.columns if c not in ("observation_id", "prediction")]
        if extra:
            raise _error(path, "is not a known column (expected: observation_id, prediction)", field="header",
                         value=extra[0])
        ids = _ids(frame["observation_id"].to_numpy(dtype=object), path)
        raw = pd.to_numeric(frame["prediction"], errors="coerce").to_numpy(dtype=np.float64)
        text = frame["prediction"].to_numpy()
        bad = np.flatnonzero(~np.isfinite(raw))
        if len(bad):
            raise _error(path, "is not a finite number", bad[0], "prediction", text[bad[0]])
    values = _finite(raw, path, lambda c: "prediction")
    _unique(ids, path)
    return Representation(name, "predictions", ids, values, str(path))
