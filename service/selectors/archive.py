"""Selector references of container submissions: an uploaded archive or a pinned image.

- Local backend: a gzip-compressed tar of a selector directory (`selector.py`
  at its top, or inside its one top-level folder). It is checked when
  uploaded (only regular files and folders, relative names of at most
  `NAME_MAX_BYTES` per part, no path that is a file in one entry and a folder
  in another, bounded count and unpacked size, each header checked as it is
  read, before the data behind it is decompressed), stored
  content-addressed like a scores upload, and unpacked afresh into the job's
  work directory with world-readable modes (the selector runs as a uid of its
  own). An error while unpacking is the submitter's (`ArchiveUnpackFailed`,
  naming the entry, never the host directory), unless the host ran out of
  something (`HostUnpackFailed`, retried).
- Docker backend: an image reference pinned by digest
  (`name@sha256:<64 hex>`); a tag alone is refused, because a moved tag would
  change what an earlier submission ran.
"""

from __future__ import annotations

import errno
import gzip
import io
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from expaudit.errors import InternalError, InvalidInput
from service.process import defaults
from service.errors import ValidationFailed

SELECTOR_ENTRY = "selector.py"
ARCHIVE_FORMAT = "selector-tar.gz"
IMAGE_FORMAT = "docker-image"
_IMAGE = re.compile(r"[a-z0-9]+([._/:-][a-z0-9]+)*@sha256:[0-9a-f]{64}")
NAME_MAX_BYTES = 255
"""Longest part of an entry's path (a file name on Linux file systems)."""
HOST_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM, errno.EROFS,
                         errno.EMFILE, errno.ENFILE})
"""Unpacking errors that are the host's (a full or broken disk), not the archive's."""


class ArchiveUnpackFailed(InvalidInput, ValueError):
    """A stored archive could not be unpacked because of what it holds (the submitter's fault);
    the message names the archive and the entry, never a host path."""


class HostUnpackFailed(InternalError, OSError):
    """The host could not unpack an archive (no space, an I/O error): retried; the message
    names no host path."""


@dataclass(frozen=True)
class ArchiveEntry:
    """One member of a checked archive: its path inside the selector, kind and size."""

    path: PurePosixPath
    is_dir: bool
    size: int
    executable: bool
    name: str = field(default="", compare=False)
    """The entry's name in the archive (for messages)."""


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
    if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES for p in parts):
        raise _invalid(filename, f"entry '{member.name[:300]}' has a name part longer than "
                       f"{NAME_MAX_BYTES} bytes")
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
        entries.append(ArchiveEntry(path, member.isdir(), member.size, bool(member.mode & 0o111),
                                    member.name))
    checked = _locate_entry(entries, filename)
    _refuse_conflicts(checked.entries, filename)
    return checked


def _refuse_conflicts(entries, filename: str) -> None:
    """Refuse two entries that need one path to be a file and a folder: `x` and `x/y`
    (in either order), or `x` as a file and as a folder. The same file twice is a tar
    update (the later one wins) and the same folder twice is harmless."""
    files: dict[PurePosixPath, str] = {}
    folders: dict[PurePosixPath, str] = {}  # named, or needed by an entry below them
    for entry in entries:
        above = [p for p in entry.path.parents if p != PurePosixPath(".")]
        for parent in above:
            if parent in files:
                raise _conflict(filename, files[parent], entry.name, parent)
        if not entry.is_dir and entry.path in folders:
            raise _conflict(filename, folders[entry.path], entry.name, entry.path)
        if entry.is_dir:
            if entry.path in files:
                raise _conflict(filename, files[entry.path], entry.name, entry.path)
            folders.setdefault(entry.path, entry.name)
        else:
            files.setdefault(entry.path, entry.name)
        for parent in above:
            folders.setdefault(parent, entry.name)


def _conflict(filename: str, first: str, second: str, path: PurePosixPath) -> ValidationFailed:
    if first == second:
        return _invalid(filename, f"entry '{first}' is both a file and a folder")
    return _invalid(filename, f"entries '{first}' and '{second}' conflict: '{path}' would be both "
                    "a file and a folder")


def _has_entry(entries) -> bool:
    return any(e.path == PurePosixPath(SELECTOR_ENTRY) and not e.is_dir for e in entries)


def _locate_entry(entries: list[ArchiveEntry], filename: str) -> CheckedArchive:
    """Entries relative to the folder holding `selector.py` (the root or one top-level folder)."""
    if _has_entry(entries):
        return CheckedArchive(tuple(entries), 0)
    if len({e.path.parts[0] for e in entries}) == 1:
        inner = tuple(ArchiveEntry(PurePosixPath(*e.path.parts[1:]), e.is_dir, e.size, e.executable,
                                   e.name)
                      for e in entries if len(e.path.parts) > 1)
        if _has_entry(inner):
            return CheckedArchive(inner, 1)
    raise _invalid(filename, f"has no '{SELECTOR_ENTRY}' at its top (or in its one top-level folder)")


def unpack_archive(data: bytes, filename: str, directory: Path) -> Path:
    """Unpack a checked archive into `directory` (created); returns the selector folder.

    Modes are set here (folders 0755, files 0644 or 0755), never taken from
    the archive, and owners are not restored. Raises `ValidationFailed` for an
    archive the check refuses, `ArchiveUnpackFailed` for any other error the
    archive causes and `HostUnpackFailed` for the host's (`HOST_ERRNOS`);
    neither names `directory`.
    """
    checked = check_archive(data, filename)
    wanted = {e.path: e for e in checked.entries}
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
    except OSError as exc:
        raise HostUnpackFailed(f"selector archive '{filename}': the host could not make the "
                               f"selector's folder: {exc.strerror}") from None
    for tar, member in _members(data, filename):
        path = _member_path(member, filename)
        if path is None or len(path.parts) <= checked.strip:
            continue
        entry = wanted.get(PurePosixPath(*path.parts[checked.strip:]))
        if entry is None:
            continue
        try:
            _unpack_entry(tar, member, entry, directory)
        except OSError as exc:
            raise _unpack_error(filename, member.name, exc) from None
    return directory


def _unpack_entry(tar, member: tarfile.TarInfo, entry: ArchiveEntry, directory: Path) -> None:
    target = directory.joinpath(*entry.path.parts)
    if entry.is_dir:
        target.mkdir(parents=True, exist_ok=True)
        target.chmod(0o755)
        return
    _make_parents(directory, target)
    source = tar.extractfile(member)
    target.write_bytes(source.read(member.size) if source is not None else b"")
    target.chmod(0o755 if entry.executable else 0o644)


def _unpack_error(filename: str, name: str, exc: OSError) -> Exception:
    """The error of one entry that could not be unpacked, naming the entry, not the host path."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in HOST_ERRNOS:
        return HostUnpackFailed(f"selector archive '{filename}': the host could not unpack "
                                f"entry '{name[:300]}': {reason}")
    return ArchiveUnpackFailed(f"selector archive '{filename}': entry '{name[:300]}' cannot be "
                               f"unpacked: {reason}")


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
