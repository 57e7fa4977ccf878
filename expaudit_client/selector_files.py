"""A selector's files on the submitter's side: the .tar.gz a selector directory is sent as,
and a setting's /input tree unpacked from the archive the server builds.

An archive from the server is unpacked entry by entry: only plain files and
directories under ``input/``, no ``..``, at most `MAX_SELECTOR_INPUT_BYTES`, so a
hostile server (or a plain-HTTP middle) cannot write outside the target.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from expaudit_client.errors import BadSelectorInput, LinkInSelector, TargetNotEmpty

MAX_SELECTOR_INPUT_BYTES = 8 * 1024**3
"""The most a selector input tree may unpack to (the largest setting's is far smaller)."""


def selector_archive(directory: str | Path) -> bytes:
    """A .tar.gz of a selector directory, files at the top (caches and hidden files left out)."""
    directory = Path(directory)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(directory.rglob("*")):
            relative = path.relative_to(directory)
            if "__pycache__" in relative.parts or any(p.startswith(".") for p in relative.parts):
                continue
            if path.is_symlink():
                raise LinkInSelector(f"selector '{directory}': '{relative}' is a link; links "
                                     "are not sent")
            tar.add(path, arcname=relative.as_posix(), recursive=False)
    return buffer.getvalue()


def check_empty_target(target: Path) -> None:
    """Refuse a target that exists and is not an empty directory."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise TargetNotEmpty(f"'{target}' is not an empty directory")


def unpack_input(setting_id: str, archive: bytes, target: str | Path) -> Path:
    """Unpack the /input archive of `setting_id` into `target` (absent or empty); returns it."""
    target = Path(target)
    check_empty_target(target)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = tar.getmembers()
        unpacked = sum(m.size for m in members)
        if unpacked > MAX_SELECTOR_INPUT_BYTES:
            raise BadSelectorInput(f"selector input of '{setting_id}': {unpacked} bytes unpacked, "
                                   f"over the {MAX_SELECTOR_INPUT_BYTES} this client accepts")
        for member in members:
            destination = target / _input_member_path(setting_id, member)
            if member.isdir():
                destination.mkdir(parents=True, exist_ok=True)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(tar.extractfile(member).read())
            os.chmod(destination, member.mode & 0o755)
    return target


def _input_member_path(setting_id: str, member: tarfile.TarInfo) -> PurePosixPath:
    """The path under the target of one entry of a selector input archive."""
    path = PurePosixPath(member.name)
    parts = path.parts
    if (path.is_absolute() or not parts or parts[0] != "input" or ".." in parts
            or not (member.isfile() or member.isdir())):
        raise BadSelectorInput(f"selector input of '{setting_id}': unexpected entry '{member.name}'")
    return PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath()
