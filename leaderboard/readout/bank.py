"""Read one task's observation bank (docs/readout.md, "Bank files") into validated tables.

A bank directory holds `bank.json`, `observations.parquet`, `labels.parquet` (train and dev)
and optionally `outcomes.parquet`; the labels of `confirm` and the evaluation split are
sealed and read from a separate file when one is given. Every problem raises `InputError`
naming the file, the line (header = line 1, first data row = line 2), the field and the value.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.io_cells import FIRST_DATA_LINE, read_parquet
from leaderboard.readout import defaults

SPLITS = ("train", "dev", "confirm", "eval")
KINDS = ("natural", "controlled")
SEALED_SPLITS = ("confirm", "eval")
"""Splits whose labels are never published (read only from the sealed labels file)."""
OBSERVATION_COLUMNS = ("observation_id", "split", "initialization", "kind")
LABEL_COLUMNS = ("observation_id", "coordinate", "kind", "initialization", "split")
NATURAL_COLUMNS = ("episode", "frame")
CONTROLLED_COLUMNS = ("context", "grid_index", "admitted")
OUTCOME_COLUMNS = ("policy", "initialization", "seed", "success")
GRIPPER_DISTANCE = "gripper_distance"
"""Optional natural-label column: the target's distance to the gripper at that frame (a
physical covariate of the failure predictors)."""


@dataclass(frozen=True)
class BankInfo:
    """`bank.json`'s fields the audit uses."""

    task: str
    version: str
    coordinate: str
    unit: str
    min_separation: float
    grid_size: int = defaults.GRID_SIZE
    n_contexts: int = defaults.N_CONTEXTS

    def to_dict(self) -> dict:
        return {"task": self.task, "version": self.version, "coordinate": self.coordinate, "unit": self.unit,
                "min_separation": self.min_separation, "grid_size": self.grid_size,
                "n_contexts": self.n_contexts}


@dataclass(frozen=True)
class Bank:
    """A validated bank: `labels` holds public and (if read) sealed rows, one per observation."""

    info: BankInfo
    observations: pd.DataFrame
    labels: pd.DataFrame
    outcomes: pd.DataFrame | None
    sealed_read: bool
    source: str

    def labelled_splits(self) -> tuple[str, ...]:
        return tuple(s for s in SPLITS if (self.labels["split"] == s).any())


def _error(source, message, position=None, field=None, value=None) -> InputError:
    line = None if position is None else int(position) + FIRST_DATA_LINE
    return InputError(str(source), message, line=line, field=field, value=value)


def read_bank_info(path: Path) -> BankInfo:
    """Parse `bank.json`: task, version, unit, min_endpoint_separation (> 0); coordinate,
    grid_size and contexts (the number of robot contexts) optional."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _error(path, "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _error(path, f"cannot be read as JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _error(path, "must hold a JSON object")
    for key in ("task", "version", "unit", "min_endpoint_separation"):
        if key not in raw:
            raise _error(path, "is missing (required: task, version, unit, min_endpoint_separation)", field=key)
    for key in ("task", "version", "unit"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise _error(path, "must be a non-empty string", field=key, value=raw.get(key))
    separation = raw.get("min_endpoint_separation")
    if isinstance(separation, bool) or not isinstance(separation, (int, float)) \
            or not math.isfinite(separation) or separation <= 0:
        raise _error(path, "must be a positive number (the minimum endpoint separation)",
                     field="min_endpoint_separation", value=separation)
    sizes = {}
    for key, name, default in (("grid_size", "grid_size", defaults.GRID_SIZE),
                               ("contexts", "n_contexts", defaults.N_CONTEXTS)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise _error(path, "must be an integer of at least 2", field=key, value=value)
        sizes[name] = value
    coordinate = raw.get("coordinate", "coordinate")
    return BankInfo(raw["task"], raw["version"], str(coordinate), raw["unit"], float(separation), **sizes)


def _require(frame: pd.DataFrame, columns, source) -> None:
    for column in columns:
        if column not in frame.columns:
            raise _error(source, f"missing column (required: {', '.join(columns)})", field=column)


def _first(mask: np.ndarray) -> int | None:
    where = np.flatnonzero(mask)
    return int(where[0]) if len(where) else None


def _check_ids(frame: pd.DataFrame, column: str, source) -> None:
    values = frame[column]
    bad = _first(~values.map(lambda v: isinstance(v, str) and v != "").to_numpy(dtype=bool))
    if bad is not None:
        raise _error(source, "must be a non-empty string", bad, column, values.iloc[bad])


def _check_member(frame: pd.DataFrame, column: str, allowed, source, rows=None) -> None:
    rows = np.ones(len(frame), dtype=bool) if rows is None else rows
    bad = _first(rows & ~frame[column].isin(allowed).to_numpy())
    if bad is not None:
        raise _error(source, f"is not one of {', '.join(map(str, allowed))}", bad, column, frame[column].iloc[bad])


def _numbers(frame: pd.DataFrame, column: str, source, rows: np.ndarray, *, integer=False, finite=True):
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(values) | (~np.isfinite(values) if finite else False)
    if integer:
        bad = bad | (np.isfinite(values) & (values != np.round(values)))
    position = _first(rows & bad)
    if position is not None:
        what = "an integer" if integer else "a finite number"
        raise _error(source, f"is not {what}", position, column, frame[column].iloc[position])
    return values


def _unique(frame: pd.DataFrame, column: str, source) -> None:
    repeated = frame[column].duplicated().to_numpy()
    position = _first(repeated)
    if position is not None:
        raise _error(source, "appears twice", position, column, frame[column].iloc[position])


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise _error(path, "file not found")
    return read_parquet(path, str(path))


def read_labels(path: Path, info: BankInfo, *, splits) -> pd.DataFrame:
    """One labels file, validated; `splits` are the splits it may hold."""
    frame = _read(path)
    _require(frame, LABEL_COLUMNS, path)
    for column in ("observation_id", "initialization"):
        _check_ids(frame, column, path)
    _unique(frame, "observation_id", path)
    _check_member(frame, "split", splits, path)
    _check_member(frame, "kind", KINDS, path)
    natural = (frame["kind"] == "natural").to_numpy()
    controlled = ~natural
    if natural.any():
        _require(frame, NATURAL_COLUMNS, path)
    out = frame.copy()
    if controlled.any():
        _require(frame, CONTROLLED_COLUMNS, path)
        _check_member(frame, "admitted", (True, False), path, controlled)
        out["context"] = _numbers(frame, "context", path, controlled, integer=True)
        out["grid_index"] = _numbers(frame, "grid_index", path, controlled, integer=True)
        _check_range(out, "context", info.n_contexts, path, controlled)
        _check_range(out, "grid_index", info.grid_size, path, controlled)
        admitted = controlled & frame["admitted"].eq(True).to_numpy()
        keys = out.loc[controlled, ["initialization", "context", "grid_index"]].duplicated().to_numpy()
        repeats = np.flatnonzero(controlled)[keys]
        if len(repeats):
            position = int(repeats[0])
            raise _error(path, "repeats a (initialization, context, grid_index) cell", position, "grid_index",
                         frame["grid_index"].iloc[position])
        out["admitted"] = admitted
    else:
        out["admitted"] = False
    if natural.any():
        out["frame"] = _numbers(frame, "frame", path, natural, integer=True)
        if GRIPPER_DISTANCE in frame.columns:
            out[GRIPPER_DISTANCE] = _numbers(frame, GRIPPER_DISTANCE, path, natural)
    out["coordinate"] = _numbers(frame, "coordinate", path, natural | out["admitted"].to_numpy())
    return out


def _check_range(frame: pd.DataFrame, column: str, limit: int, source, rows: np.ndarray) -> None:
    values = frame[column].to_numpy()
    position = _first(rows & ((values < 0) | (values >= limit)))
    if position is not None:
        raise _error(source, f"is outside 0..{limit - 1}", position, column, int(values[position]))


def read_outcomes(path: Path) -> pd.DataFrame:
    """`outcomes.parquet`: policy, initialization, seed, success (bool)."""
    frame = _read(path)
    _require(frame, OUTCOME_COLUMNS, path)
    for column in ("policy", "initialization"):
        _check_ids(frame, column, path)
    every = np.ones(len(frame), dtype=bool)
    _numbers(frame, "seed", path, every, integer=True)
    _check_member(frame, "success", (True, False), path)
    keys = frame[["policy", "initialization", "seed"]].duplicated().to_numpy()
    position = _first(keys)
    if position is not None:
        raise _error(path, "repeats a (policy, initialization, seed) run", position, "seed", frame["seed"].iloc[position])
    return frame


def read_bank(directory, sealed_labels=None) -> Bank:
    """Read and cross-check a bank directory and, optionally, its sealed labels file."""
    root = Path(directory)
    if not root.is_dir():
        raise _error(root, "is not a bank directory")
    info = read_bank_info(root / "bank.json")
    obs_path = root / "observations.parquet"
    observations = _read(obs_path)
    _require(observations, OBSERVATION_COLUMNS, obs_path)
    for column in ("observation_id", "initialization"):
        _check_ids(observations, column, obs_path)
    _unique(observations, "observation_id", obs_path)
    _check_member(observations, "split", SPLITS, obs_path)
    _check_member(observations, "kind", KINDS, obs_path)
    public = read_labels(root / "labels.parquet", info, splits=tuple(s for s in SPLITS if s not in SEALED_SPLITS))
    parts = [public]
    if sealed_labels is not None:
        parts.append(read_labels(Path(sealed_labels), info, splits=SEALED_SPLITS))
    labels = pd.concat(parts, ignore_index=True) if len(parts) > 1 else public
    _check_against_observations(labels, observations, parts, root, sealed_labels)
    outcomes_path = root / "outcomes.parquet"
    outcomes = read_outcomes(outcomes_path) if outcomes_path.is_file() else None
    return Bank(info, observations, labels, outcomes, sealed_labels is not None, str(root))


def _check_against_observations(labels, observations, parts, root: Path, sealed) -> None:
    """Every label row is a bank observation with the same split, initialization and kind."""
    known = observations.set_index("observation_id")[["split", "initialization", "kind"]]
    sources = [root / "labels.parquet"] + ([Path(sealed)] if sealed is not None else [])
    seen = set()
    for part, source in zip(parts, sources):
        ids = part["observation_id"]
        repeated = _first(ids.isin(seen).to_numpy())
        if repeated is not None:
            raise _error(source, "is labelled twice (public and sealed)", repeated, "observation_id",
                         ids.iloc[repeated])
        seen.update(ids)
        missing = _first(~ids.isin(known.index).to_numpy())
        if missing is not None:
            raise _error(source, "is not an observation of observations.parquet", missing, "observation_id",
                         ids.iloc[missing])
        joined = known.loc[ids.to_numpy()]
        for column in ("split", "initialization", "kind"):
            differs = _first(joined[column].to_numpy() != part[column].to_numpy())
            if differs is not None:
                raise _error(source, f"disagrees with observations.parquet ('{joined[column].iloc[differs]}')",
                             differs, column, part[column].iloc[differs])
