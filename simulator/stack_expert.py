"""The scripted Stack expert with a randomized style, and the path it records.

The expert aligns its yaw with cube A (mod pi/2), approaches from above,
descends, closes, lifts to its transport height, carries A over B (through a
sideways arc), lowers, opens and retreats. The style (approach height, grasp
offset, transport height, arc, speed, dwell times, release height) is drawn
per recording, so experiences differ in how well they transfer: a low
transport height hits obstacles, a fast or offset grasp is less tolerant to
execution noise.

A path is one absolute end-effector target per 20 Hz control step: position,
yaw, gripper command and the phase (0 grasp, 1 transport, 2 place) that the
Replay retargeting uses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from simulator.stack_scenes import CUBE_A_HALF, CUBE_B_HALF, TABLE_TOP_Z, StackLayout

HOME_EE = np.array([-0.10276829, 0.0, 1.01104387])
"""End-effector site position at robosuite's Panda home configuration."""
PHASE_GRASP, PHASE_TRANSPORT, PHASE_PLACE = 0, 1, 2
SETTLE_STEPS = 8
"""Steps of holding still at the end of every path before success is checked."""


@dataclass(frozen=True)
class StackStyle:
    """How one recording moves (drawn per recording by `sample_style`)."""

    approach_height: float  # pre-grasp height above the grasp point (m)
    grasp_offset: tuple[float, float, float]  # grasp point relative to cube A's centre (m)
    transport_height: float  # end-effector height above the table while carrying (m)
    arc: float  # sideways offset of the carry path's midpoint (m)
    speed: float  # path length per control step (m)
    close_steps: int  # control steps spent closing
    release_height: float  # gap above B's top when opening (m)
    release_steps: int  # control steps spent opening
    retreat_height: float  # lift after release (m)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "StackStyle":
        return cls(**{**data, "grasp_offset": tuple(data["grasp_offset"])})


def sample_style(rng: np.random.Generator) -> StackStyle:
    """Draw one expert style."""
    return StackStyle(
        approach_height=float(rng.uniform(0.04, 0.14)),
        grasp_offset=(float(rng.uniform(-0.008, 0.008)), float(rng.uniform(-0.008, 0.008)),
                      float(rng.uniform(-0.006, 0.008))),
        transport_height=float(rng.uniform(0.07, 0.20)),
        arc=float(rng.uniform(-0.08, 0.08)),
        speed=float(rng.uniform(0.012, 0.032)),
        close_steps=int(rng.integers(6, 14)),
        release_height=float(rng.uniform(0.002, 0.03)),
        release_steps=int(rng.integers(5, 12)),
        retreat_height=float(rng.uniform(0.04, 0.10)),
    )


def grasp_yaw(cube_yaw: float) -> float:
    """The gripper yaw that aligns with a cube: the cube's yaw folded into [-pi/4, pi/4)."""
    return float((cube_yaw + np.pi / 4) % (np.pi / 2) - np.pi / 4)


def _segment(start: np.ndarray, end: np.ndarray, speed: float) -> list[np.ndarray]:
    n = max(1, int(np.ceil(np.linalg.norm(end - start) / speed)))
    return [start + (end - start) * (k / n) for k in range(1, n + 1)]


def plan_path(layout: StackLayout, style: StackStyle) -> np.ndarray:
    """The expert's target path in `layout`: array (T, 6) of x, y, z, yaw, grip, phase."""
    ax, ay, ayaw = layout.cube_a
    bx, by, _ = layout.cube_b
    yaw = grasp_yaw(ayaw)
    c, s = np.cos(yaw), np.sin(yaw)
    gx, gy, gz = style.grasp_offset
    off = np.array([c * gx - s * gy, s * gx + c * gy])
    grasp = np.array([ax + off[0], ay + off[1], TABLE_TOP_Z + CUBE_A_HALF + gz])
    above_a = grasp + [0.0, 0.0, style.approach_height]
    lift = np.array([grasp[0], grasp[1], TABLE_TOP_Z + style.transport_height])
    place = np.array([bx + off[0], by + off[1],
                      TABLE_TOP_Z + 2 * CUBE_B_HALF + CUBE_A_HALF + gz + style.release_height])
    above_b = np.array([place[0], place[1], lift[2]])
    mid = 0.5 * (lift + above_b)
    direction = above_b[:2] - lift[:2]
    normal = np.array([-direction[1], direction[0]]) / max(float(np.linalg.norm(direction)), 1e-9)
    mid[:2] += style.arc * normal
    retreat = place + [0.0, 0.0, style.retreat_height]

    rows: list[tuple] = []

    def add(points, grip, phase):
        rows.extend((p[0], p[1], p[2], yaw, grip, phase) for p in points)

    add(_segment(HOME_EE, above_a, style.speed), -1.0, PHASE_GRASP)
    add(_segment(above_a, grasp, style.speed * 0.6), -1.0, PHASE_GRASP)
    add([grasp] * style.close_steps, 1.0, PHASE_GRASP)
    add(_segment(grasp, lift, style.speed), 1.0, PHASE_GRASP)
    add(_segment(lift, mid, style.speed) + _segment(mid, above_b, style.speed), 1.0, PHASE_TRANSPORT)
    add(_segment(above_b, place, style.speed * 0.6), 1.0, PHASE_PLACE)
    add([place] * style.release_steps, -1.0, PHASE_PLACE)
    add(_segment(place, retreat, style.speed), -1.0, PHASE_PLACE)
    add([retreat] * SETTLE_STEPS, -1.0, PHASE_PLACE)
    return np.asarray(rows, dtype=np.float64)
