"""The selector protocol: the read-only /input tree a selector reads and the scores it writes.

The tree (setting.json, library/<experience_id>/, scenes/<scene_id>/) and the
scores file (/output/scores.csv) are specified in docs/selector_protocol.md.
Outcomes never enter /input: metadata keys that name outcomes are refused here, before
anything is written. The scores file is read safely here and validated exactly like an
uploaded scores file (`leaderboard.scores.parse_output`).
"""

from __future__ import annotations

import io
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from expaudit.errors import InternalError
from leaderboard.errors import InputError
from leaderboard.scores import ScoresInput, parse_output
from sandbox import defaults
from sandbox.base import SandboxError

PROTOCOL_VERSION = 1
"""Version of the /input layout, written into setting.json."""
SCORES_FILE = "scores.csv"
SCORES_SOURCE = "/output/scores.csv"
"""How the scores file is named in error messages shown to the owner."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FORBIDDEN_KEY_PARTS = ("outcome", "success", "reward", "transfer")
"""Metadata keys containing these words could carry outcomes and are refused."""


class ProtocolError(SandboxError, InternalError, ValueError):
    """Data that cannot go into /input; names the item, the field and the value.

    The service builds /input from its own frozen data, so this is its machinery's fault,
    never the selector's (a selector's bad output is an `InputError` on its scores file)."""


@dataclass(frozen=True)
class SettingInfo:
    """What setting.json says: the setting and the ids in their canonical order."""

    setting_id: str
    task: str
    experience_ids: tuple[str, ...]
    scene_ids: tuple[str, ...]


@dataclass(frozen=True)
class LibraryItem:
    """One experience as a selector sees it.

    Attributes
    ----------
    experience_id : the id (library order is the order of the sequence given).
    base_png : PNG bytes of the base-scene image.
    object_positions : object name -> [x, y, z] in the base scene (metres, world frame).
    trajectory : array name -> numeric array (e.g. `eef_pos` (T, 3)).
    meta : any further metadata (never outcomes).
    """

    experience_id: str
    base_png: bytes
    object_positions: Mapping[str, Sequence[float]]
    trajectory: Mapping[str, np.ndarray]
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QueryScene:
    """One query scene as a selector sees it (AUDIT_SPEC scene table plus positions)."""

    scene_id: str
    image_png: bytes
    state_id: str
    layout_level: int
    appearance_draw: int
    object_positions: Mapping[str, Sequence[float]]
    meta: Mapping[str, Any] = field(default_factory=dict)


def _check_keys(value: Any, where: str) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            lowered = str(key).lower()
            if any(part in lowered for part in FORBIDDEN_KEY_PARTS):
                raise ProtocolError(f"{where}: field '{key}' looks like an outcome and may not "
                                    f"be given to a selector")
            _check_keys(inner, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for inner in value:
            _check_keys(inner, where)


def _positions(positions: Mapping[str, Sequence[float]], where: str) -> dict[str, list[float]]:
    out = {}
    for name, xyz in positions.items():
        values = [float(v) for v in xyz]
        if len(values) != 3 or not all(np.isfinite(values)):
            raise ProtocolError(f"{where}: field 'object_positions.{name}' value {list(xyz)!r} "
                                f"must be three finite numbers")
        out[str(name)] = values
    return out


def _safe_id(value: str, field_name: str) -> str:
    if not value or "/" in value or value in (".", "..") or "\0" in value:
        raise ProtocolError(f"field '{field_name}': value {value!r} cannot be a directory name")
    return value


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o644)


def _mkdir(path: Path) -> None:
    path.mkdir()
    path.chmod(0o755)


def _png(data: bytes, where: str) -> bytes:
    if not isinstance(data, bytes) or not data.startswith(PNG_SIGNATURE):
        raise ProtocolError(f"{where}: the image is not PNG data")
    return data


def _write_experience(root: Path, item: LibraryItem) -> None:
    where = f"library item '{item.experience_id}'"
    _check_keys(item.meta, where)
    meta = {**item.meta, "experience_id": item.experience_id,
            "object_positions": _positions(item.object_positions, where)}
    arrays = {}
    for name, array in item.trajectory.items():
        array = np.asarray(array)
        if array.dtype.kind not in "biuf":
            raise ProtocolError(f"{where}: field 'trajectory.{name}' has dtype {array.dtype}; "
                                f"only numeric arrays are allowed")
        arrays[name] = array
    _check_keys(arrays, where)
    folder = root / item.experience_id
    _mkdir(folder)
    _write(folder / "base.png", _png(item.base_png, where))
    _write(folder / "meta.json", json.dumps(meta, indent=1, sort_keys=True).encode())
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    _write(folder / "trajectory.npz", buffer.getvalue())


def _write_scene(root: Path, scene: QueryScene) -> None:
    where = f"scene '{scene.scene_id}'"
    _check_keys(scene.meta, where)
    meta = {**scene.meta, "scene_id": scene.scene_id, "state_id": scene.state_id,
            "layout_level": int(scene.layout_level), "appearance_draw": int(scene.appearance_draw),
            "object_positions": _positions(scene.object_positions, where)}
    folder = root / scene.scene_id
    _mkdir(folder)
    _write(folder / "image.png", _png(scene.image_png, where))
    _write(folder / "meta.json", json.dumps(meta, indent=1, sort_keys=True).encode())


def prepare_input(directory: Path, setting: SettingInfo, library: Sequence[LibraryItem],
                  scenes: Sequence[QueryScene]) -> Path:
    """Write the /input tree into `directory` (created; must not exist or be empty).

    Files are world-readable (0644, directories 0755) because the selector
    runs as an unprivileged uid. The library and scenes must be given in the
    order of `setting`'s ids.

    Raises
    ------
    ProtocolError : ids out of order or unsafe, non-PNG images, non-numeric
        trajectories, or metadata that could carry outcomes.
    """
    directory = Path(directory)
    for name, given, expected in (("experience_ids", [i.experience_id for i in library],
                                   setting.experience_ids),
                                  ("scene_ids", [s.scene_id for s in scenes], setting.scene_ids)):
        if tuple(given) != tuple(expected):
            raise ProtocolError(f"field '{name}': the items given {list(given)[:5]}... are not "
                                f"the setting's {list(expected)[:5]}... in order")
        for value in expected:
            _safe_id(value, name)
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise ProtocolError(f"input directory '{directory}' is not empty")
    directory.chmod(0o755)
    info = {"protocol_version": PROTOCOL_VERSION, "setting_id": setting.setting_id,
            "task": setting.task, "k": len(setting.experience_ids), "q": len(setting.scene_ids),
            "experience_ids": list(setting.experience_ids), "scene_ids": list(setting.scene_ids)}
    _write(directory / "setting.json", json.dumps(info, indent=1).encode())
    _mkdir(directory / "library")
    for item in library:
        _write_experience(directory / "library", item)
    _mkdir(directory / "scenes")
    for scene in scenes:
        _write_scene(directory / "scenes", scene)
    return directory


def _read_scores_bytes(directory: Path, max_bytes: int) -> bytes:
    """The scores file's bytes, refusing links, non-regular files and oversize files."""
    return read_output_file(Path(directory) / SCORES_FILE, SCORES_SOURCE, max_bytes,
                            missing="the selector wrote no scores file")


def read_output_file(path: Path, source: str, max_bytes: int, *, missing: str) -> bytes:
    """The bytes of one file a program wrote to /output (`source` names it in messages),
    refusing links, non-regular files (a FIFO cannot make the read wait) and files over
    `max_bytes`; `missing` is the message when there is none."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise InputError(source, missing) from None
    if stat.S_ISLNK(info.st_mode):
        raise InputError(source, "is a symbolic link; links are rejected",
                         value=os.readlink(path))
    if not stat.S_ISREG(info.st_mode):
        raise InputError(source, "is not a regular file")
    if info.st_size > max_bytes:
        raise InputError(source, f"is {info.st_size} bytes, over the cap of {max_bytes}")
    # Checked again once open: the file may have been replaced since. O_NONBLOCK so that a
    # FIFO put in its place cannot make the open wait for a writer.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(source, missing) from None
    except OSError:  # a link put in its place (O_NOFOLLOW)
        raise InputError(source, "is not a regular file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(source, "is not a regular file")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(source, f"grew past the cap of {max_bytes} bytes while read")
    return data


def read_output(directory: Path, experience_ids: Sequence[str], scene_ids: Sequence[str], *,
                max_bytes: int = defaults.SCORES_BYTES) -> ScoresInput:
    """Read and validate `scores.csv` from a run's output directory.

    Raises `leaderboard.errors.InputError` (source "/output/scores.csv") for
    a missing, linked, special or oversize file, unreadable CSV, and every
    content problem the scores reader finds (line, field and value).
    """
    data = _read_scores_bytes(directory, max_bytes)
    return parse_output(data, experience_ids, scene_ids, source=SCORES_SOURCE)
