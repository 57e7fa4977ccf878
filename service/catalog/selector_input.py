"""The /input tree of a frozen setting, as a container submission gets it.

The one owner of that tree's contents: ids, order, layouts and trajectories
come from the frozen tables (a query set's scenes, a library's experiences),
images from the frozen image archives (the query set's scene images and the
library's base images, each read once per run) or from any other
callable passed in (a renderer), and `sandbox.protocol.prepare_input`
writes the tree. Outcomes are never read here.

What a task's trees hold is declared once, in `TASK_SCHEMAS` (the objects,
the `layout` slots and the trajectory columns); docs/selector_protocol.md's
schema is generated from it (`service.catalog.protocol_doc`).

Object positions are world-frame [x, y, z] in metres. The layouts store
(x, y, yaw) per cube or door: the third slot is a yaw in radians, never a
height, so z comes from the task's geometry (`TaskSchema.objects`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from benchmark_data.image_archive import ImageArchive, base_images_path, query_images_path
from benchmark_data.library import read_experiences
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import get_setting
from sandbox.protocol import (LibraryItem, ProtocolError, QueryScene, SettingInfo,
                                     prepare_input)
from simulator.door_scenes import DOOR_BASE_Z
from simulator.stack_scenes import CUBE_A_HALF, CUBE_B_HALF, TABLE_TOP_Z

ImageSource = Callable[[str], bytes]
"""id (scene id or experience id) -> PNG bytes."""
PATH_COLUMNS = ("x", "y", "z", "yaw", "grip", "phase")
"""Columns of a Stack recorded target path (`trajectory.npz` array `path`, shape (T, 6))."""
DOOR_PATH_COLUMNS = ("x", "y", "z", *(f"rot_{i}{j}" for i in range(3) for j in range(3)), "grip")
"""Columns of a Door recorded target path (shape (T, 13)): the gripper's target position and
its rotation matrix, row by row (`simulator.door_expert.plan_door_path`), then the grip."""
OBSTACLE_SLOTS = ("x", "y", "half_x", "half_y", "half_z")
"""The slots of a layout's `obstacle` (a box on the table; null when the scene has none)."""


def _obstacle(layout: Mapping) -> dict[str, list[float]]:
    if not layout.get("obstacle"):
        return {}
    x, y, _half_x, _half_y, half_z = layout["obstacle"]
    return {"obstacle": [x, y, TABLE_TOP_Z + half_z]}


def stack_positions(layout: Mapping) -> dict[str, list[float]]:
    """World-frame centres of the Stack objects of a layout (`simulator.stack_scenes.StackLayout` dict)."""
    positions = {"cube_a": [layout["cube_a"][0], layout["cube_a"][1], TABLE_TOP_Z + CUBE_A_HALF],
                 "cube_b": [layout["cube_b"][0], layout["cube_b"][1], TABLE_TOP_Z + CUBE_B_HALF],
                 **_obstacle(layout)}
    return {name: [float(v) for v in xyz] for name, xyz in positions.items()}


def door_positions(layout: Mapping) -> dict[str, list[float]]:
    """World-frame positions of the Door objects of a layout (`simulator.door_scenes.DoorLayout`
    dict): the door's base body (where the simulator puts it, `DOOR_BASE_Z` high) and the
    obstacle's centre."""
    positions = {"door": [layout["door"][0], layout["door"][1], DOOR_BASE_Z], **_obstacle(layout)}
    return {name: [float(v) for v in xyz] for name, xyz in positions.items()}


@dataclass(frozen=True)
class TaskSchema:
    """What the /input tree of a task's setting holds, besides the ids and images.

    Attributes
    ----------
    task : the task name (`setting.json`'s `task`).
    objects : object name -> what its `object_positions` entry is; every library entry and
        every scene has each of them, but those in `scene_only`.
    scene_only : objects that some query scenes have and no library entry has (the experts
        recorded without them).
    layout : key of `meta.json`'s `layout` -> what its value holds.
    path_columns : the columns of `trajectory.npz`'s array `path` (T rows).
    positions : layout -> object_positions.
    """

    task: str
    objects: Mapping[str, str]
    scene_only: tuple[str, ...]
    layout: Mapping[str, str]
    path_columns: tuple[str, ...]
    positions: Callable[[Mapping], dict[str, list[float]]]


_OBSTACLE_POSITION = (f"centre of the obstacle box: x, y from the layout, z = table top "
                      f"({TABLE_TOP_Z}) + half_z; only in layout level 3 query scenes")
_OBSTACLE_LAYOUT = ("null, or [x, y, half_x, half_y, half_z] (m) of a box on the table; "
                    "never in a library entry's layout")
TASK_SCHEMAS = {
    "stack": TaskSchema(
        "stack",
        {"cube_a": f"centre of the cube to pick: z = table top ({TABLE_TOP_Z}) + {CUBE_A_HALF}",
         "cube_b": f"centre of the cube to stack on: z = table top ({TABLE_TOP_Z}) + {CUBE_B_HALF}",
         "obstacle": _OBSTACLE_POSITION},
        ("obstacle",),
        {"cube_a": "[x, y, yaw]: x, y in m, yaw in rad (the third slot is not z)",
         "cube_b": "[x, y, yaw]: x, y in m, yaw in rad (the third slot is not z)",
         "obstacle": _OBSTACLE_LAYOUT},
        PATH_COLUMNS, stack_positions),
    "door": TaskSchema(
        "door",
        {"door": f"the door's base body: x, y from the layout, z = {DOOR_BASE_Z} (table top "
                 f"plus the door's bottom offset)",
         "obstacle": _OBSTACLE_POSITION},
        ("obstacle",),
        {"door": "[x, y, yaw] of the door's base: x, y in m, yaw in rad (the third slot is not z)",
         "hinge": "initial hinge angle (rad; 0 is closed)",
         "latch": "initial latch (handle) angle (rad; 0 is at rest)",
         "obstacle": _OBSTACLE_LAYOUT},
        DOOR_PATH_COLUMNS, door_positions),
}
"""Per task, what its settings' /input trees hold; a task absent here takes no selectors."""


def task_schema(setting_id: str) -> TaskSchema:
    """The schema of a setting's task (`ProtocolError` for a task with no layout reader)."""
    setting = get_setting(setting_id)
    try:
        return TASK_SCHEMAS[setting.task]
    except KeyError:
        raise ProtocolError(f"setting '{setting_id}': task '{setting.task}' has no object "
                            f"layout reader yet") from None


def takes_selectors(setting_id: str) -> bool:
    """True when the /input tree of a frozen setting can be built (its task has a schema)."""
    return get_setting(setting_id).task in TASK_SCHEMAS


def frozen_input_data(setting_id: str, *, scene_png: ImageSource, base_png: ImageSource,
                      root=None) -> tuple[SettingInfo, list[LibraryItem], list[QueryScene]]:
    """The protocol dataclasses of a setting, from the frozen tables."""
    setting = get_setting(setting_id)
    schema = task_schema(setting_id)
    scenes_table = read_scenes(setting.query_set, root)
    library_table = read_experiences(setting.library_id, root).set_index("experience_id")
    library = []
    for experience_id in setting.experience_ids:
        row = library_table.loc[experience_id]
        layout = json.loads(row["base_layout"])
        path = np.asarray(row["path"], dtype=np.float64).reshape(int(row["path_len"]), -1)
        if path.shape[1] != len(schema.path_columns):
            raise ProtocolError(f"library '{setting.library_id}' experience '{experience_id}': "
                                f"field 'path' has {path.shape[1]} columns, the {setting.task} "
                                f"schema {len(schema.path_columns)}")
        library.append(LibraryItem(
            experience_id, base_png(experience_id), schema.positions(layout), {"path": path},
            {"task": setting.task, "stream_index": int(row["stream_index"]), "layout": layout,
             "style": json.loads(row["style"]), "path_columns": list(schema.path_columns)}))
    scenes = []
    for row in scenes_table.itertuples(index=False):
        layout = json.loads(row.layout)
        scenes.append(QueryScene(row.scene_id, scene_png(row.scene_id), state_id=row.state_id,
                                 layout_level=int(row.layout_level),
                                 appearance_draw=int(row.appearance_draw),
                                 object_positions=schema.positions(layout),
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
