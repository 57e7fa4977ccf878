"""The recording stream: the expert records one experience per draw, in its own base scene.

Draw `n` of the stream is a pure function of (stream seed, n): a base layout
and an expert style. The expert's path is executed without noise in the base
scene; a recording that fails at home is rejected, and the stream keeps it
(index, reason) so the rejection rate can be published. Accepted recordings
are numbered in order: experience `stack-e000` is the first accepted one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.osc import yaw_down_rotation
from simulator.stack_scenes import StackLayout, base_scene_layout
from simulator.stack_expert import StackStyle, plan_path, sample_style

STACK_STREAM_SEED = 7_000
"""Seed of the Stack recording stream."""
DELTA_POS_SCALE = 0.05
DELTA_ROT_SCALE = 0.5
"""robosuite OSC_POSE output_max: a delta action of 1 is 5 cm / 0.5 rad."""


@dataclass(frozen=True)
class Recording:
    """One draw of the stream, accepted or not, with what was recorded."""

    stream_index: int
    layout: StackLayout
    style: StackStyle
    path: np.ndarray  # (T, 6) commanded targets: x, y, z, yaw, grip, phase
    accepted: bool
    actions: np.ndarray  # (T, 7) robosuite OSC_POSE delta actions + gripper
    states: np.ndarray  # (T, 1 + nq + nv) flattened simulator states before each step
    obs_eef_pos: np.ndarray  # (T, 3)
    obs_eef_quat: np.ndarray  # (T, 4) w, x, y, z
    obs_gripper_qpos: np.ndarray  # (T, 2)
    obs_cube_pos: np.ndarray  # (T, 6) cube A then cube B


def draw(stream_index: int) -> tuple[StackLayout, StackStyle]:
    """The base scene and style of one draw of the Stack stream."""
    rng = np.random.default_rng(np.random.SeedSequence([STACK_STREAM_SEED, stream_index]))
    return base_scene_layout(rng), sample_style(rng)


def _rot_to_quat(rot: np.ndarray) -> np.ndarray:
    import mujoco

    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot).reshape(9))
    return quat


def _rotvec(rot: np.ndarray) -> np.ndarray:
    """Axis-angle vector of a rotation matrix."""
    import mujoco

    quat = _rot_to_quat(rot)
    vec = np.empty(3)
    mujoco.mju_quat2Vel(vec, quat, 1.0)
    return vec


def record(sim, stream_index: int) -> Recording:
    """Execute draw `stream_index` noise-free in its base scene and keep everything."""
    layout, style = draw(stream_index)
    path = plan_path(layout, style)
    sim.restore(layout)
    cols: dict[str, list] = {k: [] for k in ("actions", "states", "pos", "quat", "grip", "cubes")}
    for row in path:
        pos, rot = sim.ee_pos(), sim.ee_rot()
        goal_rot = yaw_down_rotation(float(row[3]))
        delta_pos = np.clip((row[:3] - pos) / DELTA_POS_SCALE, -1, 1)
        delta_rot = np.clip(_rotvec(goal_rot @ rot.T) / DELTA_ROT_SCALE, -1, 1)
        cols["actions"].append(np.concatenate([delta_pos, delta_rot, [row[4]]]))
        cols["states"].append(sim.flat_state())
        cols["pos"].append(pos)
        cols["quat"].append(_rot_to_quat(rot))
        cols["grip"].append(sim.data.qpos[7:9].copy())
        cols["cubes"].append(np.concatenate(sim.cube_pos()))
        sim.step(row[:3].copy(), goal_rot, float(row[4]))
    accepted = sim.success()
    return Recording(stream_index=stream_index, layout=layout, style=style, path=path,
                     accepted=accepted, actions=np.asarray(cols["actions"]),
                     states=np.asarray(cols["states"]), obs_eef_pos=np.asarray(cols["pos"]),
                     obs_eef_quat=np.asarray(cols["quat"]),
                     obs_gripper_qpos=np.asarray(cols["grip"]),
                     obs_cube_pos=np.asarray(cols["cubes"]))
