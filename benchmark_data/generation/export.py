"""Export a setting in the input format of `expaudit audit`, and hash the frozen files.

`export_setting` writes `experiences.csv` (experience_id, in library order),
`scenes.csv` (scene_id, state_id, layout_level, appearance_draw) and
`outcomes.csv` (experience_id, scene_id, seed, success: one row per executed
cell; camera-blind outcomes repeated for every render of their state).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark_data.cells import WRITERS_LOCK
from benchmark_data.frozen import load_transfer
from benchmark_data.library import rejection_counts
from benchmark_data.paths import root_or_default
from benchmark_data.registry import LIBRARY_IDS, SETTINGS, get_setting
from expaudit.errors import UserError
from leaderboard.matrix import MISSING

MANIFEST = "manifest.json"


class SealedSettingError(UserError, PermissionError):
    """The outcomes of a sealed setting are never exported."""


@dataclass(frozen=True)
class ExportResult:
    directory: Path
    n_outcomes: int
    n_missing: int


def export_setting(setting_id: str, directory: str | Path, root=None) -> ExportResult:
    """Write the three CSV files of a setting into `directory` (created if needed)."""
    setting = get_setting(setting_id)
    if setting.sealed:
        raise SealedSettingError(f"setting {setting_id!r} is sealed: its outcomes are not exported")
    data = load_transfer(setting_id, root)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"experience_id": list(data.experience_ids)}).to_csv(out / "experiences.csv", index=False)
    sc = data.scenes
    pd.DataFrame({"scene_id": list(sc.scene_ids), "state_id": sc.state_ids,
                  "layout_level": sc.layout_level, "appearance_draw": sc.appearance_draw}
                 ).to_csv(out / "scenes.csv", index=False)
    i, q, s = np.nonzero(data.outcomes != MISSING)
    outcomes = pd.DataFrame({"experience_id": np.asarray(data.experience_ids)[i],
                             "scene_id": np.asarray(sc.scene_ids)[q], "seed": s,
                             "success": data.outcomes[i, q, s].astype(int)})
    outcomes.to_csv(out / "outcomes.csv", index=False)
    return ExportResult(out, len(outcomes), data.n_missing)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


WRITERS_LOCK_NAME = Path(WRITERS_LOCK).name
"""Generation runs' lock file: not data, never in a manifest."""


def build_manifest(root=None) -> dict:
    """Content hashes of every frozen file, stream counts and per-setting completeness."""
    base = root_or_default(root)
    files = {}
    for path in sorted(base.rglob("*")):
        if (path.is_file() and path.name not in (MANIFEST, WRITERS_LOCK_NAME)
                and not path.name.endswith((".jsonl", ".tmp"))):
            rel = path.relative_to(base).as_posix()
            files[rel] = {"sha256": _sha256(path), "bytes": path.stat().st_size}
    streams = {}
    for lib in LIBRARY_IDS.values():
        try:
            acc, rej = rejection_counts(lib, root)
        except FileNotFoundError:
            continue
        streams[lib] = {"accepted": acc, "rejected": rej, "rejection_rate": rej / (acc + rej)}
    settings = {}
    for sid in SETTINGS:
        try:
            outcomes = load_transfer(sid, root).outcomes
        except FileNotFoundError:
            continue
        executed = outcomes != MISSING
        settings[sid] = {"cells_done": int(executed.sum()), "cells_total": int(outcomes.size),
                         "seeds_complete": [int(s) for s in np.flatnonzero(
                             executed.reshape(-1, outcomes.shape[-1]).all(axis=0))]}
    return {"files": files, "recording_streams": streams, "settings": settings}


def write_manifest(root=None) -> Path:
    path = root_or_default(root) / MANIFEST
    path.write_text(json.dumps(build_manifest(root), indent=1, sort_keys=True) + "\n")
    return path
