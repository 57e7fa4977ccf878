"""A readout submission's upload: features or predictions per observation id, bounded and checked.

The service's one reader of a readout upload (the offline files are read by `inputs`). An
upload is bytes: Parquet (`observation_id` and `f0 .. f{D-1}`, or `observation_id` and
`prediction`) or NPZ (arrays `observation_id` and `features` (N, D), or `observation_id`
and `prediction` (N,)). Before anything is decoded, the bounds below hold on what the file
says of itself (the Parquet footer and pages through `leaderboard.scores.parquet`; the
NPZ's zip headers and each array's `.npy` header), and again on what is really read. Then
the rows are checked against the bank's public observations: every number finite, every
id once, no id the bank lacks, every observation the audit needs present. Each problem
raises `InputError` naming the file, the line (row + 2, as for tables), the field and the
value. NPZ files are never unpickled.

`encode_upload` and `decode_upload` are the stored form of a checked upload: the service
stores it beside the upload and the audit reads it instead of parsing the upload again.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd

from expaudit.errors import InternalError
from leaderboard.errors import InputError
from leaderboard.io_cells import FIRST_DATA_LINE
from leaderboard.readout.inputs import KINDS, Representation
from leaderboard.scores.parquet import read_bounded_parquet

FORMATS = ("parquet", "npz")
MAX_FEATURES = 4096
"""Widest feature vector taken (the reference representations have 128 to 3072)."""
MAX_DECODED_BYTES = 512 * 1024 * 1024
"""What an upload may decode to: 4096 float64 features of 16,000 observations."""
MAX_ID_CHARS = 200
"""Longest observation id (the banks' are about 25 characters)."""
MAX_PAGE_BYTES = 64 * 1024 * 1024
"""Largest Parquet page, as its header states before it is decompressed."""
RATIO_FLOOR_BYTES = 16 * 1024 * 1024
"""Past this an NPZ member may unpack to at most `MAX_RATIO` times its compressed size."""
MAX_RATIO = 100
ARRAYS = {"features": ("observation_id", "features"), "predictions": ("observation_id", "prediction")}
"""The NPZ arrays (and the Parquet value column's name) of each kind."""
STORED_VERSION = "expaudit-readout-upload/1"


class StoredUploadDamaged(InternalError):
    """A stored checked upload cannot be decoded: the service's own file, not the submitter's."""


def _error(source, message, row=None, field=None, value=None) -> InputError:
    line = None if row is None else int(row) + FIRST_DATA_LINE
    return InputError(str(source), message, line=line, field=field, value=value)


def required_observations(observations: pd.DataFrame, kind: str) -> np.ndarray:
    """The observation ids an upload of `kind` must hold: the `confirm` observations with an
    image (the audited split) and, for features, the `train` natural ones (the readout is
    fitted there). An observation without an image (a controlled cell that failed
    validation, `shard` empty) takes no part in any metric."""
    splits = observations["split"].to_numpy()
    need = splits == "confirm"
    if kind == "features":
        need |= (splits == "train") & (observations["kind"].to_numpy() == "natural")
    if "shard" in observations.columns:
        shard = observations["shard"]
        need &= shard.notna().to_numpy() & (shard.astype(str).to_numpy() != "")
    return observations["observation_id"].to_numpy(dtype=str)[need]


# ------------------------------------------------------------------------ NPZ

def _npy_header(handle, source, name: str):
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    except (ValueError, EOFError, SyntaxError) as exc:
        raise _error(source, f"is not a readable .npy array: {exc}", field=name) from None
    return shape, fortran, dtype


def _npz_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, source, name: str) -> np.ndarray:
    with archive.open(info) as handle:
        shape, fortran, dtype = _npy_header(handle, source, name)
        if dtype.hasobject:
            raise _error(source, "holds Python objects; NPZ uploads are read without pickle", field=name,
                         value=str(dtype))
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise _error(source, f"declares {nbytes} bytes of data in a member of {info.file_size}",
                         field=name, value=str(shape))
        data = handle.read(nbytes)
    if len(data) != nbytes:
        raise _error(source, f"is truncated: {len(data)} of {nbytes} bytes", field=name)
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def _read_npz(data: bytes, source, kind: str) -> tuple[np.ndarray, np.ndarray]:
    names = ARRAYS[kind]
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = {info.filename: info for info in archive.infolist()}
        expected = [f"{n}.npy" for n in names]
        extra = sorted(set(members) - set(expected))
        if extra:
            raise _error(source, f"is not an array of a {kind} upload (expected: {', '.join(names)})",
                         field=extra[0].removesuffix(".npy"))
        for name, member in zip(names, expected):
            if member not in members:
                raise _error(source, f"missing array (expected: {', '.join(names)})", field=name)
        total = sum(info.file_size for info in members.values())
        if total > MAX_DECODED_BYTES:
            raise _error(source, f"unpacks to {total} bytes; at most {MAX_DECODED_BYTES} are read")
        for name, member in zip(names, expected):
            info = members[member]
            if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise _error(source, f"unpacks {info.compress_size} bytes to {info.file_size}, more than "
                             f"{MAX_RATIO} times", field=name)
        ids = _npz_member(archive, members[expected[0]], source, names[0])
        values = _npz_member(archive, members[expected[1]], source, names[1])
    except InputError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise _error(source, f"cannot be read as NPZ: {exc}") from None
    if ids.dtype.kind != "U":
        raise _error(source, f"must be an array of strings, got {ids.dtype}", field="observation_id")
    if ids.dtype.itemsize // 4 > MAX_ID_CHARS:
        raise _error(source, f"holds strings of up to {ids.dtype.itemsize // 4} characters; at most "
                     f"{MAX_ID_CHARS}", field="observation_id")
    if ids.ndim != 1:
        raise _error(source, f"must be 1-d, got shape {ids.shape}", field="observation_id")
    value_name = names[1]
    if values.dtype.kind not in "fiu":
        raise _error(source, f"must hold numbers, got {values.dtype}", field=value_name)
    want = 2 if kind == "features" else 1
    if values.ndim != want or values.shape[0] != len(ids):
        layout = "(N, D)" if kind == "features" else "(N,)"
        raise _error(source, f"must be {layout} with N = {len(ids)} observation ids, got {values.shape}",
                     field=value_name)
    return ids, values


# --------------------------------------------------------------------- Parquet

def _read_parquet(data: bytes, source, kind: str, max_rows: int) -> tuple[np.ndarray, np.ndarray]:
    frame = read_bounded_parquet(data, source, max_rows=max_rows, max_bytes=MAX_DECODED_BYTES,
                                 max_cell_chars=MAX_ID_CHARS, max_columns=MAX_FEATURES + 2,
                                 max_page_bytes=MAX_PAGE_BYTES)
    if "observation_id" not in frame.columns:
        raise _error(source, "missing column", field="observation_id")
    names = [str(c) for c in frame.columns if c != "observation_id"]
    if kind == "features":
        expected = [f"f{i}" for i in range(len(names))]
        if not names or names != expected:
            wrong = next((n for n, e in zip(names, expected) if n != e), None)
            raise _error(source, "feature columns must be f0, f1, ... in order", field="header",
                         value=wrong if wrong is not None else "(no feature column)")
    elif names != ["prediction"]:
        extra = [n for n in names if n != "prediction"]
        if extra:
            raise _error(source, "is not a known column (expected: observation_id, prediction)", field="header",
                         value=extra[0])
        raise _error(source, "missing column (expected: observation_id, prediction)", field="prediction")
    for name in names:
        if frame[name].dtype.kind not in "fiu":
            raise _error(source, f"must be a number column, got {frame[name].dtype}", field=name)
    raw_ids = frame["observation_id"].to_numpy(dtype=object)
    for row, value in enumerate(raw_ids):
        if not isinstance(value, str) or value == "":
            raise _error(source, "must be a non-empty string", row, "observation_id", value)
    values = frame[names].to_numpy(dtype=np.float64)
    return raw_ids.astype(str), values if kind == "features" else values[:, 0]


# ------------------------------------------------------------------ checking

def _check_rows(ids: np.ndarray, values: np.ndarray, source, kind: str, observations: pd.DataFrame) -> None:
    for row, value in enumerate(ids):
        if value == "":
            raise _error(source, "must be a non-empty string", row, "observation_id", value)
    x = values.astype(np.float64, copy=False)
    bad = ~np.isfinite(x)
    if bad.any():
        position = tuple(np.argwhere(bad)[0])
        field = f"f{position[1]}" if kind == "features" else "prediction"
        raise _error(source, "is not a finite number", position[0], field, x[position])
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(repeated):
        row = int(order[repeated[0] + 1])
        raise _error(source, "appears twice", row, "observation_id", ids[row])
    known = pd.Index(observations["observation_id"].astype(str))
    unknown = np.flatnonzero(~pd.Index(ids).isin(known))
    if len(unknown):
        raise _error(source, f"is not an observation of the bank ({len(unknown)} unknown)", unknown[0],
                     "observation_id", ids[unknown[0]])
    need = required_observations(observations, kind)
    missing = need[~pd.Index(need).isin(pd.Index(ids))]
    if len(missing):
        raise _error(source, f"has no row for {len(missing)} observations the audit needs, the first shown",
                     field="observation_id", value=missing[0])


def read_upload(data: bytes, fmt: str, source: str, kind: str, observations: pd.DataFrame,
                name: str) -> Representation:
    """The checked rows of an upload of `kind` ("features" or "predictions") in `fmt`, against
    the bank's public `observations` (`observation_id`, `split`, `kind`, and `shard` where
    images are); `name` names the representation in the report."""
    if kind not in KINDS:
        raise _error(source, f"kind must be one of {list(KINDS)}", field="kind", value=kind)
    if fmt not in FORMATS:
        raise _error(source, f"format must be one of {list(FORMATS)}", field="format", value=fmt)
    if not data:
        raise _error(source, "file is empty")
    if fmt == "npz":
        ids, values = _read_npz(data, source, kind)
    else:
        ids, values = _read_parquet(data, source, kind, max_rows=len(observations))
    if len(ids) == 0:
        raise _error(source, "has no rows")
    if len(ids) > len(observations):
        raise _error(source, f"has {len(ids)} rows; the bank has {len(observations)} observations")
    if kind == "features" and not 1 <= values.shape[1] <= MAX_FEATURES:
        raise _error(source, f"has {values.shape[1]} features; 1 to {MAX_FEATURES} are taken", field="features")
    ids = np.asarray(ids, dtype=str)
    _check_rows(ids, values, source, kind, observations)
    return Representation(name, kind, ids, values.astype(np.float64), source)


# ------------------------------------------------------------- stored form

def encode_upload(rep: Representation) -> bytes:
    """The checked upload as the service stores it (NPZ, no pickle)."""
    buffer = io.BytesIO()
    np.savez(buffer, version=np.array(STORED_VERSION), kind=np.array(rep.kind), source=np.array(rep.source),
             observation_id=np.asarray(rep.ids, dtype=str), values=np.asarray(rep.values, dtype=np.float64))
    return buffer.getvalue()


def decode_upload(data: bytes, name: str) -> Representation:
    """A stored checked upload (`encode_upload`) as the representation `name`."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            if str(z["version"]) != STORED_VERSION:
                raise StoredUploadDamaged(f"stored readout upload has version {z['version']}, "
                                          f"expected {STORED_VERSION}")
            return Representation(name, str(z["kind"]), z["observation_id"].astype(str),
                                  z["values"].astype(np.float64), str(z["source"]))
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise StoredUploadDamaged(f"stored readout upload cannot be decoded: {exc}") from None
