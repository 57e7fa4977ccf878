"""The scripted Door expert: pinch the handle, turn it past the latch, pull the door open on an arc.

The gripper approaches horizontally along the latch axis (a grasp from above
would hit the panel), pinches the handle bar top and bottom, turns it about
the latch axis (the latch releases only past about 1 rad), then carries the
grasp point and the gripper's orientation around the hinge axis. The style
(grasp point along the bar, stand-off, turn and pull angles, speeds, dwell
times) is drawn per recording. A path row is the absolute target pose
(x, y, z, 9 rotation-matrix entries) and the gripper command.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from simulator.door_scenes import sample_door_layout
from simulator.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE, _rot_to_quat, _rotvec
from simulator.stack_expert import HOME_EE

SETTLE_STEPS = 6
GRASP_DEPTH = 0.015
"""How far past the bar's centre line the grasp target lies (the fingers wrap the bar)."""
REORIENT_HOLD = 10
PRE_CLOSE_HOLD = 6
"""Steps at the grasp point with the gripper open, so the arm settles before the pinch."""
"""Steps spent in front of the handle while the wrist finishes turning horizontal."""
HOME_ROT = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
"""Gripper pointing down, the orientation the arm starts in."""


@dataclass(frozen=True)
class DoorStyle:
    """How one Door recording moves."""

    grasp_fraction: float  # grasp point along the handle bar, from the latch axis (0-1)
    standoff: float  # pre-grasp distance in front of the handle (m)
    turn: float  # latch angle the expert turns the handle to (rad)
    pull: float  # hinge angle the expert pulls towards (rad; the joint stops at 0.4)
    speed: float  # path length per control step while reaching (m)
    turn_steps: int  # control steps of the handle turn
    pull_steps: int  # control steps of the pull
    close_steps: int  # control steps spent closing

    def to_dict(self) -> dict:
        return asdict(self)


def sample_door_style(rng: np.random.Generator) -> DoorStyle:
    """Draw one Door expert style."""
    return DoorStyle(grasp_fraction=float(rng.uniform(0.55, 0.9)), standoff=float(rng.uniform(0.12, 0.18)),
                     turn=float(rng.uniform(1.3, 1.55)), pull=float(rng.uniform(0.45, 0.6)),
                     speed=float(rng.uniform(0.015, 0.03)), turn_steps=int(rng.integers(22, 32)),
                     pull_steps=int(rng.integers(22, 36)), close_steps=int(rng.integers(6, 12)))


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix about a unit axis (Rodrigues)."""
    a = axis / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def grasp_pose(geometry: dict, style: DoorStyle) -> tuple[np.ndarray, np.ndarray]:
    """Grasp point on the handle bar and the gripper orientation that pinches it."""
    c, a = geometry["latch_center"], geometry["latch_axis"] / np.linalg.norm(geometry["latch_axis"])
    r = geometry["handle"] - c
    depth = (r @ a) * a
    along = r - depth
    point = c + depth + style.grasp_fraction * along + GRASP_DEPTH * a
    x_axis = np.array([0.0, 0.0, -1.0])  # fingers close vertically on the bar (this sign keeps joint 6 in range)
    z_axis = a - (a @ x_axis) * x_axis
    z_axis /= np.linalg.norm(z_axis)
    y_axis = np.cross(z_axis, x_axis)
    return point, np.column_stack([x_axis, y_axis, z_axis])


def _slerp(r0: np.ndarray, r1: np.ndarray, t: float) -> np.ndarray:
    """Rotation a fraction t of the way from r0 to r1 (about the fixed axis between them)."""
    rel = r1 @ r0.T
    angle = np.arccos(np.clip((np.trace(rel) - 1) / 2, -1.0, 1.0))
    if angle < 1e-9:
        return r1.copy()
    axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]])
    return _rot(axis / (2 * np.sin(angle)), t * angle) @ r0


def _line(p0, p1, speed):
    n = max(1, int(np.ceil(np.linalg.norm(p1 - p0) / speed)))
    return [p0 + (p1 - p0) * (k / n) for k in range(1, n + 1)]


def plan_door_path(geometry: dict, style: DoorStyle, hinge0: float, latch0: float) -> np.ndarray:
    """The expert's path from the current door state: array (T, 13): pos, rotation (9), grip."""
    point, rot = grasp_pose(geometry, style)
    a = geometry["latch_axis"] / np.linalg.norm(geometry["latch_axis"])
    pre = point - style.standoff * a
    rows: list[np.ndarray] = []

    def add(p, r, g):
        rows.append(np.concatenate([p, r.reshape(-1), [g]]))

    reach = _line(HOME_EE, pre, style.speed)
    reach += [pre] * REORIENT_HOLD
    for k, p in enumerate(reach, start=1):
        add(p, _slerp(HOME_ROT, rot, min(1.0, k / (len(reach) - REORIENT_HOLD // 2))), -1.0)
    for p in _line(pre, point, style.speed * 0.3) + [point] * PRE_CLOSE_HOLD:
        add(p, rot, -1.0)
    for _ in range(style.close_steps):
        add(point, rot, 1.0)
    c = geometry["latch_center"]
    turn = max(style.turn - latch0, 0.0)
    for k in range(1, style.turn_steps + 1):
        q = _rot(a, turn * k / style.turn_steps)
        add(c + q @ (point - c), q @ rot, 1.0)
    q_turn = _rot(a, turn)
    held, held_rot = c + q_turn @ (point - c), q_turn @ rot
    h, z = geometry["hinge_anchor"], geometry["hinge_axis"]
    pull = max(style.pull - hinge0, 0.0)
    for k in range(1, style.pull_steps + 1):
        q = _rot(z, pull * k / style.pull_steps)
        add(h + q @ (held - h), q @ held_rot, 1.0)
    for _ in range(SETTLE_STEPS):
        add(rows[-1][:3], rows[-1][3:12].reshape(3, 3), 1.0)
    return np.asarray(rows)


def execute_door_path(sim, path: np.ndarray) -> None:
    """Drive the simulator along a Door path (one row per control step)."""
    for row in path:
        sim.step(row[:3].copy(), row[3:12].reshape(3, 3).copy(), float(row[12]))


DOOR_STREAM_SEED = 8_000
"""Seed of the Door recording stream."""


def door_stream_draw(stream_index: int):
    """Base layout (levels 0-2) and style of one draw of the Door recording stream."""
    rng = np.random.default_rng(np.random.SeedSequence([DOOR_STREAM_SEED, stream_index]))
    return sample_door_layout(int(rng.integers(0, 3)), rng), sample_door_style(rng)


def run_door_expert(sim, layout, style: DoorStyle) -> tuple[np.ndarray, bool]:
    """Plan from the restored layout, execute noise-free; returns (path, robosuite success)."""
    sim.restore(layout)
    path = plan_door_path(sim.geometry(), style, sim.hinge(), sim.latch())
    execute_door_path(sim, path)
    return path, sim.success()


def record_door(sim, stream_index: int) -> dict:
    """Draw `stream_index` of the Door stream, executed noise-free with everything recorded.

    Returns a dict with layout, style, path, accepted, and per-step arrays:
    actions (robosuite OSC_POSE delta + gripper), states (time, qpos, qvel),
    pos, quat (end-effector), grip (finger qpos), door (hinge, latch, handle xyz).
    """
    import mujoco

    layout, style = door_stream_draw(stream_index)
    sim.restore(layout)
    path = plan_door_path(sim.geometry(), style, sim.hinge(), sim.latch())
    cols: dict[str, list] = {k: [] for k in ("actions", "states", "pos", "quat", "grip", "door")}
    d = sim.data
    for row in path:
        pos, rot = sim.ee_pos(), sim.ee_rot()
        goal_rot = row[3:12].reshape(3, 3)
        cols["actions"].append(np.concatenate([np.clip((row[:3] - pos) / DELTA_POS_SCALE, -1, 1),
                                               np.clip(_rotvec(goal_rot @ rot.T) / DELTA_ROT_SCALE, -1, 1),
                                               [row[12]]]))
        cols["states"].append(np.concatenate([[d.time], d.qpos, d.qvel]))
        cols["pos"].append(pos)
        cols["quat"].append(_rot_to_quat(rot))
        cols["grip"].append(d.qpos[7:9].copy())
        cols["door"].append(np.concatenate([[sim.hinge(), sim.latch()], sim.geometry()["handle"]]))
        sim.step(row[:3].copy(), goal_rot.copy(), float(row[12]))
    mujoco.mj_forward(sim.model, d)
    return {"stream_index": stream_index, "layout": layout, "style": style, "path": path,
            "accepted": sim.success(), **{k: np.asarray(v) for k, v in cols.items()}}
