"""Selector references of container submissions: an uploaded archive or a pinned image.

- Local backend: a gzip-compressed tar of a selector directory (`selector.py`
  at its top, or inside its one top-level folder). It is checked when
  uploaded (only regular files and folders, relative names, bounded count and
  unpacked size, each header checked as it is read, before the data behind it
  is decompressed), stored
  content-addressed like a scores upload, and unpacked afresh into the job's
  work directory with world-readable modes (the selector runs as a uid of its
  own).
- Docker backend: an image reference pinned by digest
  (`name@sha256:<64 hex>`); a tag alone is refused, because a moved tag would
  change what an earlier submission ran.
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from expaudit.errors import InvalidInput
from service import defaults
from service.errors import ValidationFailed

SELECTOR_ENTRY = "selector.py"
ARCHIVE_FORMAT = "selector-tar.gz"
IMAGE_FORMAT = "docker-image"
_IMAGE = re.compile(r"[a-z0-9]+([._/:-][a-z0-9]+)*@sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ArchiveEntry:
    """One member of a checked archive: its path inside the selector, kind and size."""

    path: PurePosixPath
    is_dir: bool
    size: int
    executable: bool


def _invalid(filename: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"selector archive '{filename}': {message}", field="selector")


class _ArchiveTooLarge(InvalidInput):
    """The decompressed stream passed its bound (`_BoundedStream`); refused as `ValidationFailed`."""


class _BoundedStream:
    """The decompressed bytes of a gzip stream, refusing to yield more than `limit` of them.

    Skipping a member's data in a compressed tar means decompressing it, so a
    bound on the headers alone still lets a bomb's zeros keep the reader busy;
    this bound holds on what is actually decompressed.
    """

    def __init__(self, data: bytes, limit: int) -> None:
        self._gzip = gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
        self.limit = limit
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit + 1 - self.count
        chunk = self._gzip.read(room if size is None or size < 0 else min(size, room))
        self.count += len(chunk)
        if self.count > self.limit:
            raise _ArchiveTooLarge
        return chunk


def content_limit(compressed_bytes: int) -> int:
    """Unpacked bytes an archive of `compressed_bytes` may reach: the size cap, and at most
    `SELECTOR_ARCHIVE_MAX_RATIO` times the upload once past `SELECTOR_ARCHIVE_RATIO_FREE_BYTES`."""
    by_ratio = max(defaults.SELECTOR_ARCHIVE_RATIO_FREE_BYTES,
                   defaults.SELECTOR_ARCHIVE_MAX_RATIO * compressed_bytes)
    return min(defaults.SELECTOR_ARCHIVE_MAX_BYTES, by_ratio)


_HEADER_BYTES = 1536
"""Decompressed bytes an entry may take besides its data: its header, an extended
header and the padding of its data to the next 512-byte block."""


def _too_large(filename: str, data: bytes) -> ValidationFailed:
    limit = content_limit(len(data))
    if limit < defaults.SELECTOR_ARCHIVE_MAX_BYTES:
        return _invalid(filename, f"unpacks to more than {limit} bytes, over "
                        f"{defaults.SELECTOR_ARCHIVE_MAX_RATIO} times its {len(data)} compressed "
                        "bytes; a selector's files compress far less")
    return _invalid(filename, f"unpacks to more than {defaults.SELECTOR_ARCHIVE_MAX_BYTES} bytes")


def _members(data: bytes, filename: str):
    """The archive's members in order, each yielded before the data behind it is read
    (a streamed tar over a bounded decompressed stream)."""
    try:
        limit = content_limit(len(data)) + _HEADER_BYTES * (defaults.SELECTOR_ARCHIVE_MAX_FILES + 2)
        with tarfile.open(fileobj=_BoundedStream(data, limit), mode="r|") as tar:
            for member in tar:
                yield tar, member
    except _ArchiveTooLarge:
        raise _too_large(filename, data) from None
    except (tarfile.TarError, zlib.error, EOFError, OSError) as exc:
        raise _invalid(filename, f"is not a gzip-compressed tar archive, or is damaged ({exc})") from None


def _member_path(member: tarfile.TarInfo, filename: str) -> PurePosixPath | None:
    parts = [p for p in PurePosixPath(member.name).parts if p not in ("", ".")]
    if member.name.startswith("/") or ".." in parts:
        raise _invalid(filename, f"entry '{member.name}' leaves the archive's folder")
    return PurePosixPath(*parts) if parts else None


@dataclass(frozen=True)
class CheckedArchive:
    """A checked archive: its entries relative to the selector folder.

    Attributes:
        entries: files and folders, paths relative to the folder holding `selector.py`.
        strip: 1 when that folder is the archive's one top-level folder, else 0.
    """

    entries: tuple[ArchiveEntry, ...]
    strip: int


def check_archive(data: bytes, filename: str) -> CheckedArchive:
    """Check an uploaded selector archive; raises `ValidationFailed` naming the archive and
    the offending entry. Each header is checked before the data behind it is decompressed."""
    entries, total, count = [], 0, 0
    for _tar, member in _members(data, filename):
        count += 1
        if count > defaults.SELECTOR_ARCHIVE_MAX_FILES:
            raise _invalid(filename, f"has more than {defaults.SELECTOR_ARCHIVE_MAX_FILES} entries; "
                           f"at most {defaults.SELECTOR_ARCHIVE_MAX_FILES} are accepted")
        path = _member_path(member, filename)
        if not (member.isfile() or member.isdir()):
            raise _invalid(filename, f"entry '{member.name}' is a link or special file; "
                           "only regular files and folders are accepted")
        if path is None:
            continue
        total += member.size
        if total > content_limit(len(data)):
            raise _too_large(filename, data)
        entries.append(ArchiveEntry(path, member.isdir(), member.size, bool(member.mode & 0o111)))
    return _locate_entry(entries, filename)


def _has_entry(entries) -> bool:
    return any(e.path == PurePosixPath(SELECTOR_ENTRY) and not e.is_dir for e in entries)


def _locate_entry(entries: list[ArchiveEntry], filename: str) -> CheckedArchive:
    """Entries relative to the folder holding `selector.py` (the root or one top-level folder)."""
    if _has_entry(entries):
        return CheckedArchive(tuple(entries), 0)
    if len({e.path.parts[0] for e in entries}) == 1:
        inner = tuple(ArchiveEntry(PurePosixPath(*e.path.parts[1:]), e.is_dir, e.size, e.executable)
                      for e in entries if len(e.path.parts) > 1)
        if _has_entry(inner):
            return CheckedArchive(inner, 1)
    raise _invalid(filename, f"has no '{SELECTOR_ENTRY}' at its top (or in its one top-level folder)")


def unpack_archive(data: bytes, filename: str, directory: Path) -> Path:
    """Unpack a checked archive into `directory` (created); returns the selector folder.

    Modes are set here (folders 0755, files 0644 or 0755), never taken from
    the archive, and owners are not restored.
    """
    checked = check_archive(data, filename)
    wanted = {e.path: e for e in checked.entries}
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for tar, member in _members(data, filename):
        path = _member_path(member, filename)
        if path is None or len(path.parts) <= checked.strip:
            continue
        entry = wanted.get(PurePosixPath(*path.parts[checked.strip:]))
        if entry is None:
            continue
        target = directory.joinpath(*entry.path.parts)
        if entry.is_dir:
            target.mkdir(parents=True, exist_ok=True)
            target.chmod(0o755)
            continue
        _make_parents(directory, target)
        source = tar.extractfile(member)
        target.write_bytes(source.read(member.size) if source is not None else b"")
        target.chmod(0o755 if entry.executable else 0o644)
    return directory


def _make_parents(directory: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    for parent in target.relative_to(directory).parents:
        (directory / parent).chmod(0o755)


def check_image_reference(value: str) -> str:
    """An image reference pinned by digest (`name@sha256:<64 hex>`); raises otherwise."""
    value = value.strip()
    if not _IMAGE.fullmatch(value):
        raise ValidationFailed(
            f"image must be a reference pinned by digest, like 'registry/name@sha256:<64 hex>'; "
            f"got '{value[:200]}'", field="image")
    return value
