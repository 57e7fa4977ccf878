"""The frozen image archives: agent-view PNGs packed one tar per query set and per library.

A query set's scenes are `query_sets/<id>/images.tar`, one member `<scene_id>.png`
per scene; a library's base scenes are `libraries/<id>/base_images.tar`, one
member `<experience_id>.png` per experience. The image generation writes them
with `member_name`; everything that reads them by id goes through this module.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from benchmark_data.paths import library_dir, query_set_dir
from expaudit.errors import DataNotFound

QUERY_TAR = "images.tar"
"""File name of a query set's scene images, in its directory."""
BASE_TAR = "base_images.tar"
"""File name of a library's base-scene images, in its directory."""
PNG_SUFFIX = ".png"


class ImageNotFound(DataNotFound, KeyError):
    """An archive that lacks the image of a scene or an experience."""

    def __str__(self) -> str:  # KeyError's default repr-quotes the message
        return str(self.args[0])


class ArchiveNotFound(DataNotFound, FileNotFoundError):
    """An image archive that is not in the frozen data (not rendered yet)."""


def query_images_path(query_set: str, root: str | Path | None = None) -> Path:
    """The archive of a query set's scene images (`<scene_id>.png`)."""
    return query_set_dir(query_set, root) / QUERY_TAR


def base_images_path(library_id: str, root: str | Path | None = None) -> Path:
    """The archive of a library's base-scene images (`<experience_id>.png`)."""
    return library_dir(library_id, root) / BASE_TAR


def member_name(item_id: str) -> str:
    """The archive member of a scene or an experience: `<id>.png`."""
    return f"{item_id}{PNG_SUFFIX}"


def item_id(member: str) -> str | None:
    """The scene or experience id a member holds, or None when it is not a PNG."""
    name = Path(member).name
    return name[:-len(PNG_SUFFIX)] if name.endswith(PNG_SUFFIX) else None


def _label(archive: Path) -> str:
    return f"{archive.parent.name}/{archive.name}"


def read_pngs(archive: str | Path, ids: Sequence[str]) -> list[bytes]:
    """PNG bytes of `ids`, in their order, from one pass over the archive's index.

    Raises `ImageNotFound` (a KeyError) naming the archive and the missing member.
    """
    archive = Path(archive)
    out = []
    with tarfile.open(archive) as tar:
        for item in ids:
            name = member_name(item)
            try:
                member = tar.getmember(name)
            except KeyError:
                raise ImageNotFound(f"{_label(archive)} has no image '{name}'") from None
            handle = tar.extractfile(member)
            if handle is None:
                raise ImageNotFound(f"{_label(archive)} member '{name}' is not a file")
            out.append(handle.read())
    return out


def read_png(archive: str | Path, item: str) -> bytes:
    """PNG bytes of one scene or experience (`ImageNotFound` names a missing one)."""
    return read_pngs(archive, [item])[0]


def iter_pngs(archive: str | Path) -> Iterator[tuple[str, bytes]]:
    """(id, PNG bytes) of every PNG member, in archive order."""
    with tarfile.open(archive) as tar:
        for member in tar:
            item = item_id(member.name) if member.isfile() else None
            if item is None:
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                yield item, handle.read()


def first_png(archive: str | Path) -> bytes | None:
    """The first PNG of an archive (its published order), or None when it has none."""
    return next((png for _, png in iter_pngs(archive)), None)


class ImageArchive:
    """Every PNG of one archive, read in one pass, looked up by id: `archive(item_id) -> bytes`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ArchiveNotFound(f"image archive {self.path} does not exist "
                                  "(render it with `expaudit data images`)")
        self._images = dict(iter_pngs(self.path))

    def __call__(self, item: str) -> bytes:
        try:
            return self._images[item]
        except KeyError:
            raise ImageNotFound(f"{self.path.name} has no image '{member_name(item)}'") from None


def read_tar_images(tar_path: Path, ids: Sequence[str]) -> list[np.ndarray]:
    """RGB uint8 arrays of `<id>.png` members, in the order of `ids` (KeyError names a missing one)."""
    from PIL import Image

    out = []
    for png in read_pngs(tar_path, ids):
        with Image.open(io.BytesIO(png)) as image:
            out.append(np.asarray(image.convert("RGB")))
    return out
