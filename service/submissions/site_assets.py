"""Pictures the published leaderboard shows: one query scene per setting, as its thumbnail.

Read from the setting's frozen image archive (`Catalog.archive_path(id, "images")`);
a setting without one has no thumbnail. Each archive is read once per process for
as long as its size and modification time stay the same.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from benchmark_data.image_archive import first_png
from service.catalog import Catalog


@lru_cache(maxsize=32)
def _first_png(path: str, size: int, mtime_ns: int) -> bytes | None:
    """The archive's first PNG, cached while its size and modification time stay the same."""
    return first_png(path)


def first_scene_png(archive: Path) -> bytes | None:
    stat = archive.stat()
    return _first_png(str(archive), stat.st_size, stat.st_mtime_ns)


def setting_thumbnails(catalog: Catalog) -> dict[str, bytes]:
    """setting id -> PNG of its first query scene, for every setting with an image archive."""
    thumbnails = {}
    for summary in catalog.list_settings():
        archive = catalog.archive_path(summary.id, "images")
        if archive is None:
            continue
        png = first_scene_png(archive)
        if png is not None:
            thumbnails[summary.id] = png
    return thumbnails
