"""The agent view and robosuite's eye-in-hand camera, rendered together for a two-camera policy.

`DualCamera` is a `PolicyCamera` (same lean render, same appearance draws) that
also renders `robot0_eye_in_hand`, the camera robosuite mounts on the Panda's
hand and robomimic's image policies read beside the agent view. `render`
returns both side by side, (size, 2 * size, 3): agent view left, wrist right,
so the demonstration recorder and the episode loop, which store and pass one
image per step, carry both unchanged; `split` takes them apart again.

A draw's lights, tints and textures are model fields, so they apply to both
views; its camera rotation moves the agent view only (the wrist camera is
fixed to the hand). Only visual fields change, as for `PolicyCamera`.
"""

from __future__ import annotations

import mujoco
import numpy as np

from simulator.appearance import AppearanceDraw
from simulator.errors import BadLevel, ModelMismatch
from simulator.policy_camera import POLICY_IMAGE_SIZE, PolicyCamera

WRIST_CAMERA = "robot0_eye_in_hand"
"""robosuite's hand-mounted camera on the Panda."""


class DualCamera(PolicyCamera):
    """Agent view and wrist view of one simulator, side by side; one per simulator."""

    def __init__(self, sim, task: str = "stack", size: int = POLICY_IMAGE_SIZE) -> None:
        super().__init__(sim, task=task, size=size, lean=True)
        if mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_CAMERA, WRIST_CAMERA) < 0:
            raise ModelMismatch(f"the {task} model has no camera {WRIST_CAMERA!r}")
        self.wrist = mujoco.Renderer(sim.model, size, size)

    def set_draw(self, draw: AppearanceDraw) -> None:
        super().set_draw(draw)
        if self.wrist._gl_context is not None:
            self.wrist._gl_context.make_current()
        for tex in self.appearance._texs:  # the textures the draw rewrote, into the wrist context too
            mujoco.mjr_uploadTexture(self.sim.model, self.wrist._mjr_context, tex)

    def render_wrist(self) -> np.ndarray:
        """The wrist view of the current state, uint8 (size, size, 3)."""
        self.wrist.update_scene(self.sim.data, camera=WRIST_CAMERA, scene_option=self.option)
        flags = self.wrist.scene.flags
        for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION,
                     mujoco.mjtRndFlag.mjRND_SKYBOX):
            flags[flag] = 0
        return self.wrist.render().copy()

    def render(self) -> np.ndarray:
        """Agent view and wrist view side by side, uint8 (size, 2 * size, 3)."""
        agent = super().render()
        return np.concatenate([agent, self.render_wrist()], axis=1)

    def close(self) -> None:
        super().close()
        self.wrist.close()


def split(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(..., H, 2H, 3) side-by-side frames -> (agent views, wrist views), each (..., H, H, 3)."""
    side = images.shape[-2] // 2
    if images.shape[-2] != 2 * side or images.shape[-3] != side:
        raise BadLevel(f"expected side-by-side frames (H, 2H, 3), got shape {images.shape}")
    return images[..., :side, :], images[..., side:, :]
