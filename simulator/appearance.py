"""Appearance draws: lighting, colours, textures and a small camera rotation, physics untouched.

Draw 0 is robosuite's nominal appearance. Draws 1-4 of a state are drawn from
a generator seeded by (state id, draw), and change only visual model fields:
the light's position and brightness, the material tints of the table, floor
and cubes, the brightness and contrast of the table and floor textures, and
the camera's orientation (up to `MAX_CAMERA_DEG` about its own x and y axes;
robosuite's agent view for Stack, its front view for Door). None of these enters the dynamics, so the simulator state hash
and every trajectory are identical across draws (tested).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import mujoco
import numpy as np

from simulator.errors import ModelMismatch, UnknownTask

MAX_CAMERA_DEG = 4.0
"""Largest camera rotation of a perturbed draw, per axis (degrees)."""
CAMERAS = {"stack": "agentview", "door": "frontview"}
"""The camera query images are rendered from, per task (robosuite's Door agentview misses the door)."""
TINTED_MATERIALS = {
    "stack": ("table_ceramic", "floorplane", "walls_mat", "cubeA_redwood_mat", "cubeB_greenwood_mat"),
    "door": ("table_ceramic", "floorplane", "walls_mat", "Door_MatDarkWood", "Door_MatMetal"),
}
"""Materials whose colour a draw tints, per task (same count, so draws are task-independent)."""
TEXTURES = ("tex-ceramic", "texplane")
"""Textures whose pixels a draw rescales (brightness and contrast)."""
N_TINTS = 5


@dataclass(frozen=True)
class AppearanceDraw:
    """The visual parameters of one draw (draw 0: all neutral)."""

    draw: int
    light_offset: tuple[float, float, float]
    light_gain: float
    tints: tuple[tuple[float, float, float], ...]  # one RGB multiplier per tinted material
    texture_gain: tuple[float, ...]  # contrast per TEXTURES
    texture_bias: tuple[float, ...]  # brightness shift per TEXTURES (0-255 scale)
    camera_deg: tuple[float, float]


def sample_draw(state_id: str, draw: int) -> AppearanceDraw:
    """The appearance of render `draw` (0-4) of a state; draw 0 is nominal."""
    if draw == 0:
        return AppearanceDraw(0, (0.0, 0.0, 0.0), 1.0, tuple((1.0, 1.0, 1.0) for _ in range(N_TINTS)),
                              tuple(1.0 for _ in TEXTURES), tuple(0.0 for _ in TEXTURES), (0.0, 0.0))
    rng = np.random.default_rng(np.random.SeedSequence([zlib.crc32(state_id.encode()), draw, 99]))
    return AppearanceDraw(
        draw=draw,
        light_offset=tuple(float(v) for v in rng.uniform(-0.8, 0.8, size=3)),
        light_gain=float(rng.uniform(0.55, 1.25)),
        tints=tuple(tuple(float(v) for v in rng.uniform(0.55, 1.0, size=3)) for _ in range(N_TINTS)),
        texture_gain=tuple(float(v) for v in rng.uniform(0.6, 1.3, size=len(TEXTURES))),
        texture_bias=tuple(float(v) for v in rng.uniform(-40, 40, size=len(TEXTURES))),
        camera_deg=tuple(float(v) for v in rng.uniform(-MAX_CAMERA_DEG, MAX_CAMERA_DEG, size=2)),
    )


class Appearance:
    """Applies draws to one model, always starting from the nominal visual fields."""

    def __init__(self, model: mujoco.MjModel, task: str = "stack") -> None:
        if task not in TINTED_MATERIALS:
            raise UnknownTask(f"task must be one of {sorted(TINTED_MATERIALS)}, got {task!r}")
        self.model = model
        m = model
        materials = TINTED_MATERIALS[task]
        self.camera = CAMERAS[task]
        self._cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, self.camera)
        self._mats = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_MATERIAL, n) for n in materials]
        self._texs = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TEXTURE, n) for n in TEXTURES]
        missing = [n for n, i in zip(materials + TEXTURES, self._mats + self._texs) if i < 0]
        if missing:
            raise ModelMismatch(f"model lacks visual elements {missing}")
        self._light_pos = m.light_pos.copy()
        self._light_diffuse = m.light_diffuse.copy()
        self._mat_rgba = m.mat_rgba.copy()
        self._cam_quat = m.cam_quat[self._cam].copy()
        self._tex = {t: self._tex_slice(t).copy() for t in self._texs}
        self.current = 0

    def _tex_slice(self, tex: int) -> np.ndarray:
        m = self.model
        start = m.tex_adr[tex]
        size = m.tex_width[tex] * m.tex_height[tex] * m.tex_nchannel[tex]
        return m.tex_data[start:start + size]

    def apply(self, draw: AppearanceDraw) -> list[int]:
        """Set the model's visual fields to `draw`; returns the texture ids to re-upload."""
        m = self.model
        m.light_pos[:] = self._light_pos + np.asarray(draw.light_offset)
        m.light_diffuse[:] = np.clip(self._light_diffuse * draw.light_gain, 0.0, 1.0)
        m.mat_rgba[:] = self._mat_rgba
        for mat, tint in zip(self._mats, draw.tints):
            m.mat_rgba[mat, :3] = self._mat_rgba[mat, :3] * np.asarray(tint)
        for tex, gain, bias in zip(self._texs, draw.texture_gain, draw.texture_bias):
            nominal = self._tex[tex].astype(np.float64)
            mean = nominal.mean()
            pixels = np.clip((nominal - mean) * gain + mean + bias, 0, 255)
            self._tex_slice(tex)[:] = pixels.astype(np.uint8)
        m.cam_quat[self._cam] = _rotate_quat(self._cam_quat, *draw.camera_deg)
        self.current = draw.draw
        return list(self._texs)


def _rotate_quat(quat: np.ndarray, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    """`quat` turned about its own x axis by pitch and its own y axis by yaw."""
    out = np.asarray(quat, dtype=np.float64).copy()
    for axis, deg in ((np.array([1.0, 0.0, 0.0]), pitch_deg), (np.array([0.0, 1.0, 0.0]), yaw_deg)):
        half = np.radians(deg) / 2
        q = np.concatenate([[np.cos(half)], np.sin(half) * axis])
        res = np.empty(4)
        mujoco.mju_mulQuat(res, out, q)
        out = res
    return out


class SceneRenderer:
    """Agent-view images of a simulator under appearance draws (needs an OpenGL backend)."""

    def __init__(self, sim, size: int = 128, task: str = "stack") -> None:
        self.sim = sim
        self.appearance = Appearance(sim.model, task)
        self.renderer = mujoco.Renderer(sim.model, size, size)

    def render(self, draw: AppearanceDraw) -> np.ndarray:
        """RGB image (size, size, 3) of the simulator's current state under `draw`."""
        for tex in self.appearance.apply(draw):
            mujoco.mjr_uploadTexture(self.sim.model, self.renderer._mjr_context, tex)
        self.renderer.update_scene(self.sim.data, camera=self.appearance.camera)
        return self.renderer.render().copy()

    def close(self) -> None:
        self.renderer.close()


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 image."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", optimize=True)
    return buf.getvalue()
