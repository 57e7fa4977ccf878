"""Agent-view PNGs of query scenes and base scenes, packed one tar per query set / library.

Packing keeps the repository's file count small; the archives' names and members are
those of the frozen image archives' reader (`benchmark_data.image_archive`).
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from benchmark_data.image_archive import base_images_path, member_name, query_images_path
from benchmark_data.library import read_experiences
from benchmark_data.query_sets import read_scenes
from simulator.appearance import encode_png, sample_draw
from simulator.door_scenes import DoorLayout
from simulator.stack_scenes import StackLayout

IMAGE_SIZE = 128
"""Side of every published image (pixels)."""


def _add_png(tar: tarfile.TarFile, name: str, png: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(png)
    info.mtime = 0  # byte-stable archives: the manifest hash depends only on content
    tar.addfile(info, io.BytesIO(png))


def write_query_images(query_set: str, sim, renderer, root=None) -> Path:
    """Render every scene (state x draw) of a query set into `images.tar` (sim of the set's task)."""
    scenes = read_scenes(query_set, root)
    renders = ((member_name(row.scene_id), _layout(row.task, row.layout),
                sample_draw(row.state_id, int(row.appearance_draw))) for row in scenes.itertuples())
    return _write_renders(query_images_path(query_set, root), renders, sim, renderer)


def write_base_images(library_id: str, sim, renderer, root=None) -> Path:
    """Render each experience's base scene (nominal appearance) into `base_images.tar`."""
    frame = read_experiences(library_id, root)
    renders = ((member_name(row.experience_id), _layout(row.task, row.base_layout),
                sample_draw(f"base-{row.experience_id}", 0)) for row in frame.itertuples())
    return _write_renders(base_images_path(library_id, root), renders, sim, renderer)


def _layout(task: str, layout_json: str):
    return (DoorLayout if task == "door" else StackLayout).from_dict(json.loads(layout_json))


def _write_renders(path: Path, renders, sim, renderer) -> Path:
    """One PNG per (file name, layout, appearance draw), in order, into the tar at `path`."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, layout, draw in renders:
            sim.restore(layout)
            _add_png(tar, name, encode_png(renderer.render(draw)))
    return path

