"""The project's compose file read through docker-compose (the venv's), and the app roles it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO_ROOT

COMPOSE = str(Path(sys.executable).parent / "docker-compose")
APP_ROLES = ("web", "worker", "runner")
"""The services that run the project's image (beside `redis`, `minio` and `static`)."""


def compose(*args: str, file: Path = REPO_ROOT / "compose.yaml") -> subprocess.CompletedProcess:
    """`docker-compose -f file args...` with a bare environment, its output captured."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([COMPOSE, "-f", str(file), *args], capture_output=True, text=True,
                          env=env, cwd=file.parent, timeout=60)
