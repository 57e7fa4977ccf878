"""The validated scores of an upload as one canonical artifact, stored beside the upload.

The web process validates an upload once and stores this; the worker audits
from it without parsing the upload again. Layout: one line of JSON
(`{"format": 1, "settings": [{"setting_id", "shape": [K, Q],
"selection_only"}, ...]}`), a newline, then each setting's (K, Q) float64
matrix, little-endian, row-major, in the order listed. Nothing executable is
read back (no pickle), and the same scores always give the same bytes.
"""

from __future__ import annotations

import json

import numpy as np

from expaudit.errors import InternalError
from leaderboard.scores.table import SettingScores

FORMAT_VERSION = 1
"""Version of the artifact's layout; a reader refuses any other."""
_DTYPE = np.dtype("<f8")


class StoredScoresDamaged(InternalError, ValueError):
    """A stored scores artifact that is not one this version wrote (the service's fault)."""


def encode_scores(validated: list[SettingScores]) -> bytes:
    """The artifact's bytes for the validated scores of each setting."""
    head = {"format": FORMAT_VERSION,
            "settings": [{"setting_id": v.setting_id, "shape": list(v.scores.shape),
                          "selection_only": bool(v.selection_only)} for v in validated]}
    body = b"".join(np.ascontiguousarray(v.scores, dtype=_DTYPE).tobytes() for v in validated)
    return json.dumps(head, sort_keys=True).encode() + b"\n" + body


def decode_scores(data: bytes) -> list[SettingScores]:
    """The validated scores an artifact holds; `StoredScoresDamaged` for anything else."""
    line, sep, body = data.partition(b"\n")
    try:
        head = json.loads(line) if sep else None
        entries = [(str(e["setting_id"]), tuple(int(n) for n in e["shape"]), bool(e["selection_only"]))
                   for e in head["settings"]] if isinstance(head, dict) else None
    except (ValueError, TypeError, KeyError) as exc:
        raise StoredScoresDamaged(f"stored scores: unreadable head ({type(exc).__name__})") from None
    if entries is None or head.get("format") != FORMAT_VERSION:
        raise StoredScoresDamaged("stored scores: not an artifact of format "
                                  f"{FORMAT_VERSION}")
    sizes = [shape[0] * shape[1] * _DTYPE.itemsize for _, shape, _ in entries]
    if any(len(shape) != 2 or min(shape) < 0 for _, shape, _ in entries) or sum(sizes) != len(body):
        raise StoredScoresDamaged(f"stored scores: {len(body)} bytes of scores do not match "
                                  "the shapes listed")
    out, start = [], 0
    for (setting_id, shape, selection_only), size in zip(entries, sizes):
        matrix = np.frombuffer(body, dtype=_DTYPE, count=size // _DTYPE.itemsize, offset=start)
        out.append(SettingScores(setting_id, matrix.reshape(shape).astype(np.float64), selection_only))
        start += size
    return out
