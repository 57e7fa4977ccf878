"""Physical measurements of the readout audit: the target coordinate, speeds, contacts, visibility.

One `Target` per task names the coordinate a readout predicts and the bodies it lives
on: Door, the hinge angle in degrees (bodies: the door, its latch and frame); Stack,
cube A's world x in millimetres (body: cube A). The admission checks of a controlled
cell (docs/readout_protocol.md) and the start check of an initialization are made of
these measurements; the thresholds live in `simulator.readout_protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simulator.errors import ModelMismatch, UnknownTask
from simulator.stack_sim import ARM_DOFS

ROBOT_PREFIXES = ("robot0_", "gripper0_", "fixed_mount0_", "mount0_")
"""Name prefixes of the robot's bodies (arm, gripper, pedestal) in robosuite models."""
TARGET_BODIES = {"door": ("Door_main", "Door_frame", "Door_door", "Door_latch"), "stack": ("cubeA_main",)}
"""Bodies a robot contact with which counts as touching the target, per task."""
VISIBLE_BODIES = {"door": ("Door_door", "Door_latch"), "stack": ("cubeA_main",)}
"""Bodies whose pixels in the agent view make the target visible: the moving panel and handle
(Door), cube A (Stack)."""
UNITS = {"door": "deg", "stack": "mm"}
START_CHECK_STEPS = 20
"""Control steps (1 s at 20 Hz) of neutral action in the start check of an initialization."""
MAX_START_PENETRATION_MM = 1.0
"""Deepest interpenetration allowed between any two bodies of a start (issue 38)."""
MAX_START_MOTION = {"door": 0.1, "stack": 1.0}
"""Largest change of the coordinate in the start check's second of neutral action (deg, mm)."""


def _body_ids(model: mujoco.MjModel, names) -> np.ndarray:
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in names]
    missing = [n for n, i in zip(names, ids) if i < 0]
    if missing:
        raise ModelMismatch(f"model lacks bodies {missing}")
    return np.asarray(ids)


class Target:
    """The coordinate of one task's simulator and the measurements around it."""

    def __init__(self, sim, task: str) -> None:
        if task not in UNITS:
            raise UnknownTask(f"task must be one of {sorted(UNITS)}, got {task!r}")
        self.sim, self.task, self.unit = sim, task, UNITS[task]
        m = sim.model
        robot = [i for i in range(m.nbody)
                 if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or "").startswith(ROBOT_PREFIXES)]
        self.robot_bodies = np.asarray(robot)
        self.target_bodies = _body_ids(m, TARGET_BODIES[task])
        self.visible_bodies = _body_ids(m, VISIBLE_BODIES[task])
        if task == "door":
            self.qadr = int(sim.hinge_adr)
            self.vadr = int(m.jnt_dofadr[sim.hinge_jnt])
        else:
            self.qadr = int(sim.qadr_a)
            joint = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "cubeA_joint0")
            self.vadr = int(m.jnt_dofadr[joint])

    # ---- the coordinate ---------------------------------------------------------------
    def coordinate(self) -> float:
        """The target coordinate now, in task units (deg or mm)."""
        q = self.sim.data.qpos[self.qadr]
        return float(np.degrees(q)) if self.task == "door" else float(q * 1000.0)

    def set_coordinate(self, value: float) -> None:
        """Write the coordinate (task units) into qpos; the object's velocity is zeroed."""
        d = self.sim.data
        if self.task == "door":
            d.qpos[self.qadr] = np.radians(value)
            d.qvel[self.vadr] = 0.0
        else:
            d.qpos[self.qadr] = value / 1000.0
            d.qvel[self.vadr:self.vadr + 6] = 0.0

    def gripper_distance(self) -> float:
        """Distance (m) from the end-effector site to the target point: the door handle (Door),
        cube A's centre (Stack); a physical covariate of the failure predictors."""
        d = self.sim.data
        point = (d.site_xpos[self.sim.handle_site] if self.task == "door"
                 else d.qpos[self.qadr:self.qadr + 3])
        return float(np.linalg.norm(d.site_xpos[self.sim.site] - point))

    def object_speed(self) -> float:
        """Speed of the target coordinate's object: hinge deg/s (Door), cube A mm/s (Stack)."""
        v = self.sim.data.qvel
        if self.task == "door":
            return float(abs(np.degrees(v[self.vadr])))
        return float(np.linalg.norm(v[self.vadr:self.vadr + 3]) * 1000.0)

    def joint_speed(self) -> float:
        """Largest absolute arm joint speed (rad/s)."""
        return float(np.max(np.abs(self.sim.data.qvel[:ARM_DOFS])))

    # ---- contacts ---------------------------------------------------------------------
    def contacts(self) -> tuple[bool, float]:
        """(any robot-target contact, deepest interpenetration over all contacts in mm)."""
        m, d = self.sim.model, self.sim.data
        touching, deepest = False, 0.0
        for k in range(d.ncon):
            c = d.contact[k]
            deepest = max(deepest, -float(c.dist) * 1000.0)
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            if ((b1 in self.robot_bodies and b2 in self.target_bodies)
                    or (b2 in self.robot_bodies and b1 in self.target_bodies)):
                touching = True
        return touching, deepest


class Visibility:
    """Pixels of the target in a camera, from a segmentation render of the same lean view."""

    def __init__(self, target: Target, camera: str, option: mujoco.MjvOption, size: int) -> None:
        self.target, self.camera, self.option = target, camera, option
        self.renderer = mujoco.Renderer(target.sim.model, size, size)
        self.renderer.enable_segmentation_rendering()
        geom_body = target.sim.model.geom_bodyid
        self._target_geoms = np.flatnonzero(np.isin(geom_body, target.visible_bodies))

    def pixels(self) -> int:
        """How many pixels of the camera show the target's visible bodies."""
        self.renderer.update_scene(self.target.sim.data, camera=self.camera, scene_option=self.option)
        seg = self.renderer.render()
        geoms = seg[..., 0][seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)]
        return int(np.isin(geoms, self._target_geoms).sum())

    def close(self) -> None:
        self.renderer.close()


@dataclass(frozen=True)
class StartCheck:
    """The physical check of one initialization's start (issue 38's definition)."""

    penetration_mm: float
    motion: float  # change of the coordinate under 1 s of neutral action (task units)
    object_speed: float  # at the end of that second (task units per s)
    valid: bool
    reason: str  # "" when valid


def hold(sim, steps: int) -> None:
    """`steps` control steps of the neutral action: hold the end-effector pose and the gripper."""
    pos, rot, grip = sim.ee_pos(), sim.ee_rot(), sim.grip_cmd
    for _ in range(steps):
        sim.step(pos, rot, grip)


def check_start(sim, task: str, target: Target | None = None) -> StartCheck:
    """Check the simulator's current state as a start: no interpenetration deeper than
    `MAX_START_PENETRATION_MM`, the coordinate still within `MAX_START_MOTION` under a second of
    neutral action. The state is left where the second of neutral action took it."""
    target = target or Target(sim, task)
    mujoco.mj_forward(sim.model, sim.data)
    _, deepest = target.contacts()
    before = target.coordinate()
    hold(sim, START_CHECK_STEPS)
    motion = abs(target.coordinate() - before)
    reasons = []
    if deepest > MAX_START_PENETRATION_MM:
        reasons.append(f"interpenetration {deepest:.2f} mm > {MAX_START_PENETRATION_MM} mm")
    if motion > MAX_START_MOTION[task]:
        reasons.append(f"coordinate moved {motion:.3f} {target.unit} > {MAX_START_MOTION[task]} "
                       "under neutral action")
    return StartCheck(round(deepest, 4), round(motion, 5), round(target.object_speed(), 5),
                      not reasons, "; ".join(reasons))
