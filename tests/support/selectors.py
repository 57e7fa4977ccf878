"""Selector archives and the small policy setting that container submissions run on."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path


SETTING = "stack-replay-k3-orig"


STATES = ["stack-orig-s00", "stack-orig-s10", "stack-orig-s20", "stack-orig-s30"]


SANDBOX_OK = os.geteuid() == 0 and shutil.which("unshare") and shutil.which("setpriv")


def selector_archive(directory: Path, top: str | None = None) -> bytes:
    """A .tar.gz of a selector directory (files at the top, or under folder `top`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(Path(directory).rglob("*")):
            if "__pycache__" in path.parts:
                continue
            name = path.relative_to(directory).as_posix()
            tar.add(path, arcname=f"{top}/{name}" if top else name, recursive=False)
    return buffer.getvalue()
