"""Agent-view PNGs of query scenes and base scenes, packed one tar per query set / library.

Packing keeps the repository's file count small; `read_image` reads one PNG
back without unpacking the rest.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from benchmark_data.paths import library_dir, query_set_dir

IMAGE_SIZE = 128
"""Side of every published image (pixels)."""
QUERY_TAR = "images.tar"
BASE_TAR = "base_images.tar"


def _add_png(tar: tarfile.TarFile, name: str, png: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(png)
    info.mtime = 0  # byte-stable archives: the manifest hash depends only on content
    tar.addfile(info, io.BytesIO(png))


def write_query_images(query_set: str, sim, renderer, root=None) -> Path:
    """Render every scene (state x draw) of a query set into `images.tar` (sim of the set's task)."""
    from benchmark_data.query_sets import read_scenes
    from runner.appearance import encode_png, sample_draw
    from runner.door_scenes import DoorLayout
    from runner.scenes import StackLayout

    scenes = read_scenes(query_set, root)
    path = query_set_dir(query_set, root) / QUERY_TAR
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for row in scenes.itertuples():
            layout_cls = DoorLayout if row.task == "door" else StackLayout
            sim.restore(layout_cls.from_dict(json.loads(row.layout)))
            image = renderer.render(sample_draw(row.state_id, int(row.appearance_draw)))
            _add_png(tar, f"{row.scene_id}.png", encode_png(image))
    return path


def write_base_images(library_id: str, sim, renderer, root=None) -> Path:
    """Render each experience's base scene (nominal appearance) into `base_images.tar`."""
    from benchmark_data.library import read_experiences
    from runner.appearance import encode_png, sample_draw
    from runner.door_scenes import DoorLayout
    from runner.scenes import StackLayout

    frame = read_experiences(library_id, root)
    path = library_dir(library_id, root) / BASE_TAR
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for row in frame.itertuples():
            layout_cls = DoorLayout if row.task == "door" else StackLayout
            sim.restore(layout_cls.from_dict(json.loads(row.base_layout)))
            image = renderer.render(sample_draw(f"base-{row.experience_id}", 0))
            _add_png(tar, f"{row.experience_id}.png", encode_png(image))
    return path


def read_image(tar_path: Path, name: str) -> bytes:
    """The PNG bytes of one member (`<scene_id>.png` or `<experience_id>.png`)."""
    with tarfile.open(tar_path) as tar:
        try:
            member = tar.getmember(name)
        except KeyError:
            raise KeyError(f"{tar_path.name} has no image {name!r}") from None
        return tar.extractfile(member).read()
