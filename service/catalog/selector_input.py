"""The /input tree of a frozen setting, as a container submission gets it.

The one owner of that tree's contents: ids, order, layouts and trajectories
come from the frozen tables (a query set's scenes, a library's experiences),
images from the frozen image archives (the query set's scene images and the
library's base images, each read once per run) or from any other
callable passed in (a renderer), and `sandbox.protocol.prepare_input`
writes the tree. Outcomes are never read here.

Object positions are world-frame centres [x, y, z] in metres: the layouts
store (x, y, yaw) per cube on the table, so z is the table top plus the
cube's half side; the obstacle's z is the table top plus its half height.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from benchmark_data.image_archive import ImageArchive, base_images_path, query_images_path
from benchmark_data.library import read_experiences
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import get_setting
from sandbox.protocol import (LibraryItem, ProtocolError, QueryScene, SettingInfo,
                                     prepare_input)
from simulator.stack_scenes import CUBE_A_HALF, CUBE_B_HALF, TABLE_TOP_Z

ImageSource = Callable[[str], bytes]
"""id (scene id or experience id) -> PNG bytes."""
PATH_COLUMNS = ("x", "y", "z", "yaw", "grip", "phase")
"""Columns of the recorded target path (`trajectory.npz` array `path`, shape (T, 6))."""


def stack_positions(layout: dict) -> dict[str, list[float]]:
    """World-frame centres of the Stack objects of a layout (`simulator.stack_scenes.StackLayout` dict)."""
    positions = {"cube_a": [layout["cube_a"][0], layout["cube_a"][1], TABLE_TOP_Z + CUBE_A_HALF],
                 "cube_b": [layout["cube_b"][0], layout["cube_b"][1], TABLE_TOP_Z + CUBE_B_HALF]}
    if layout.get("obstacle"):
        x, y, _half_x, _half_y, half_z = layout["obstacle"]
        positions["obstacle"] = [x, y, TABLE_TOP_Z + half_z]
    return {name: [float(v) for v in xyz] for name, xyz in positions.items()}


def frozen_input_data(setting_id: str, *, scene_png: ImageSource, base_png: ImageSource,
                      root=None) -> tuple[SettingInfo, list[LibraryItem], list[QueryScene]]:
    """The protocol dataclasses of a setting, from the frozen tables."""
    setting = get_setting(setting_id)
    if setting.task != "stack":
        raise ProtocolError(f"setting '{setting_id}': task '{setting.task}' has no object "
                            f"layout reader yet")
    scenes_table = read_scenes(setting.query_set, root)
    library_table = read_experiences(setting.library_id, root).set_index("experience_id")
    library = []
    for experience_id in setting.experience_ids:
        row = library_table.loc[experience_id]
        layout = json.loads(row["base_layout"])
        path = np.asarray(row["path"], dtype=np.float64).reshape(int(row["path_len"]), -1)
        library.append(LibraryItem(
            experience_id, base_png(experience_id), stack_positions(layout), {"path": path},
            {"task": setting.task, "stream_index": int(row["stream_index"]), "layout": layout,
             "style": json.loads(row["style"]), "path_columns": list(PATH_COLUMNS)}))
    scenes = []
    for row in scenes_table.itertuples(index=False):
        layout = json.loads(row.layout)
        scenes.append(QueryScene(row.scene_id, scene_png(row.scene_id), state_id=row.state_id,
                                 layout_level=int(row.layout_level),
                                 appearance_draw=int(row.appearance_draw),
                                 object_positions=stack_positions(layout),
                                 meta={"query_set": setting.query_set, "layout": layout}))
    info = SettingInfo(setting.id, setting.task, setting.experience_ids,
                       tuple(scenes_table["scene_id"]))
    return info, library, scenes


def prepare_frozen_input(directory: Path, setting_id: str, *, scene_png: ImageSource,
                         base_png: ImageSource, root=None) -> SettingInfo:
    """Write the /input tree of a frozen setting into `directory`."""
    info, library, scenes = frozen_input_data(setting_id, scene_png=scene_png,
                                              base_png=base_png, root=root)
    prepare_input(Path(directory), info, library, scenes)
    return info


def prepare_setting_input(directory: Path, setting_id: str, root=None) -> SettingInfo:
    """Write the /input tree of frozen setting `setting_id` (data under `root`) into `directory`."""
    setting = get_setting(setting_id)
    scenes = ImageArchive(query_images_path(setting.query_set, root))
    bases = ImageArchive(base_images_path(setting.library_id, root))
    return prepare_frozen_input(Path(directory), setting_id, scene_png=scenes, base_png=bases,
                                root=root)
