"""Provenance of executed cells: which code and which packages produced an outcome."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path

OUTCOME_SOURCES = ("osc.py", "stack_sim.py", "scenes.py", "stack_expert.py", "replay.py",
                   "recording.py", "executor.py")
"""The runner modules whose code determines an outcome; their hash is the code version."""
PACKAGES = ("robosuite", "mujoco", "numpy", "numba")
"""Packages whose versions can change a rollout."""


@lru_cache(maxsize=1)
def code_version() -> str:
    """`sha256:` + the first 16 hex digits of the hash over the outcome-determining sources."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in OUTCOME_SOURCES:
        h.update(name.encode())
        h.update((root / name).read_bytes())
    return "sha256:" + h.hexdigest()[:16]


@lru_cache(maxsize=1)
def package_versions() -> str:
    """JSON object of the versions of `PACKAGES` installed here."""
    return json.dumps({name: metadata.version(name) for name in PACKAGES}, sort_keys=True)
