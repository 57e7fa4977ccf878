"""The camera a learned policy reads: small, cheap renders of the agent view under an appearance draw.

A policy rollout renders every control step, so the render dominates a CPU
rollout. Three choices make it cheap without changing what the image shows:
no shadows, reflections, skybox or multisampling, a small square image, and
the robot's high-polygon visual meshes (over `HEAVY_MESH_FACES` faces; the arm
links, the hand and the pedestal, about 168k of 182k faces in Stack) swapped
for the robot's own low-polygon collision geoms. Task objects (cubes, door,
handle) always keep their visual geoms. Only visual fields change (geom
groups, render flags), so the simulator state and every trajectory are
untouched. `benchmarks/policy_rollout_bench.py` measures the gain.

Images are uint8 (H, W, 3), top row first (as `mujoco.Renderer` returns them).
"""

from __future__ import annotations

import mujoco
import numpy as np

from simulator.appearance import Appearance, AppearanceDraw
from simulator.errors import ModelMismatch

POLICY_IMAGE_SIZE = 64
"""Side of the square policy image (pixels)."""
HEAVY_MESH_FACES = 1000
"""Visual meshes with more faces than this are replaced by the robot's collision geoms."""
SHOWN_GROUP = 4
"""Geom group of everything the policy camera shows."""
HIDDEN_GROUP = 5
"""Geom group of the visual meshes the policy camera leaves out."""
_ROBOT_PREFIXES = ("robot0_", "gripper0_", "fixed_mount0_", "mount0_")
"""Name prefixes of the robot's geoms (arm, gripper, pedestal) in robosuite models."""


def _geom_name(model: mujoco.MjModel, geom: int) -> str:
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, geom) or ""


def _faces(model: mujoco.MjModel, geom: int) -> int:
    if model.geom_type[geom] != mujoco.mjtGeom.mjGEOM_MESH:
        return 0
    return int(model.mesh_facenum[model.geom_dataid[geom]])


def lean_geom_groups(model: mujoco.MjModel) -> np.ndarray:
    """The geom groups of the lean view: light visual geoms plus low-poly robot collision geoms.

    A model made lean already (another camera on the same simulator) keeps its groups.
    """
    if np.isin(model.geom_group, (SHOWN_GROUP, HIDDEN_GROUP)).all():
        return model.geom_group.copy()
    groups = np.full(model.ngeom, HIDDEN_GROUP, dtype=model.geom_group.dtype)
    for g in range(model.ngeom):
        name, faces = _geom_name(model, g), _faces(model, g)
        robot = name.startswith(_ROBOT_PREFIXES)
        if model.geom_group[g] == 1 and (faces <= HEAVY_MESH_FACES or not robot):
            groups[g] = SHOWN_GROUP
        elif model.geom_group[g] == 0 and robot and faces <= HEAVY_MESH_FACES:
            groups[g] = SHOWN_GROUP
    return groups


class PolicyCamera:
    """Renders what a policy sees from one simulator; one per simulator (not thread-safe).

    `lean=False` renders robosuite's default visuals (the baseline the
    benchmark compares against); the images of a policy must always be made
    with the setting it was trained with.
    """

    def __init__(self, sim, task: str = "stack", size: int = POLICY_IMAGE_SIZE,
                 lean: bool = True) -> None:
        self.sim = sim
        self.size = size
        self.lean = lean
        model = sim.model
        self.appearance = Appearance(model, task)
        self.option = mujoco.MjvOption()
        already_lean = np.isin(model.geom_group, (SHOWN_GROUP, HIDDEN_GROUP)).all()
        if not lean and already_lean:
            raise ModelMismatch("lean=False: this simulator's model was made lean by another PolicyCamera")
        if lean:
            model.vis.quality.offsamples = 0
            model.geom_group[:] = lean_geom_groups(model)
            self.option.geomgroup[:] = 0
            self.option.geomgroup[SHOWN_GROUP] = 1
        self.renderer = mujoco.Renderer(model, size, size)
        self._draw: int | None = None

    def set_draw(self, draw: AppearanceDraw) -> None:
        """Restyle the scene (lights, colours, textures, camera) for the next renders."""
        if self.renderer._gl_context is not None:  # upload into this renderer's own context
            self.renderer._gl_context.make_current()
        for tex in self.appearance.apply(draw):
            mujoco.mjr_uploadTexture(self.sim.model, self.renderer._mjr_context, tex)
        self._draw = draw.draw

    def render(self) -> np.ndarray:
        """The current simulator state as a uint8 (size, size, 3) image, top row first."""
        self.renderer.update_scene(self.sim.data, camera=self.appearance.camera,
                                   scene_option=self.option)
        if self.lean:
            flags = self.renderer.scene.flags
            for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION,
                         mujoco.mjtRndFlag.mjRND_SKYBOX):
                flags[flag] = 0
        return self.renderer.render().copy()

    def close(self) -> None:
        self.renderer.close()
