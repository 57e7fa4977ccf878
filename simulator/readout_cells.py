"""Observations of the readout audit: natural frames of the expert, controlled grid cells.

A *natural* observation is a frame of the expert's trajectory from an initialization,
with the true coordinate at that frame; object state, arm, occlusion and progress vary
together. A *controlled* cell restores the initialization, sets the coordinate and the
arm (a context: an arm and finger configuration of a natural frame), settles under a
fixed neutral action and measures the admission checks (`simulator.readout_protocol`):

- Door: the latch is turned to `DOOR_LATCH_CLEAR` rad with its spring off while the cell
  settles (at the natural latch angles the latch sits inside the frame at hinge angles of
  1-11 degrees and the door is kicked); the spring is restored afterwards.
- Both tasks: the controller's nullspace posture is the cell's arm configuration while
  settling (the home posture would pull the arm away), then restored.

Both policy cameras (agent view and wrist, 64 px, nominal appearance, the lean view the
published policies were trained on: `simulator.wrist_camera.DualCamera`) are rendered for
every cell, admitted or not. The label is the coordinate after settling.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simulator.appearance import sample_draw
from simulator.door_expert import plan_door_path
from simulator.osc import yaw_down_rotation
from simulator.readout_checks import Target, Visibility
from simulator.readout_inits import Initialization, start
from simulator.stack_expert import plan_path
from simulator.stack_sim import ARM_DOFS, GRIPPER_OPEN
from simulator.wrist_camera import DualCamera, split

DOOR_LATCH_CLEAR = 1.35
"""Latch angle (rad) of a Door cell: the latch clear of the frame at every hinge angle."""
SETTLE_STEPS = 10
"""Control steps (0.5 s) of neutral action a controlled cell settles for."""
SPEED_WINDOW = 3
"""The admission speeds are the largest over the last this-many control steps of settling."""


@dataclass(frozen=True)
class Frame:
    """One control step of a natural trajectory: the state before the step's action."""

    step: int
    coordinate: float
    gripper_distance: float  # m, end effector to the target point
    arm: np.ndarray  # (7,) arm joint positions
    fingers: np.ndarray  # (2,) finger joint positions


@dataclass(frozen=True)
class CellMeasure:
    """What a controlled cell measured (before any threshold is applied)."""

    target: float
    coordinate: float
    drift: float  # abs(coordinate - target), task units
    max_object_speed: float  # task units per s, largest over the last SPEED_WINDOW steps
    max_joint_speed: float  # rad/s, same window
    contact: bool  # a robot-target contact at any control step of settling
    penetration_mm: float  # deepest interpenetration seen while settling
    visible_px: int  # agent-view pixels of the target after settling
    gripper_distance: float  # m, end effector to the target point after settling
    state_hash: str  # the simulator state after settling


def expert_commands(sim, task: str, init: Initialization) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The expert's commands from the (already restored) start: (goal pos, goal rot, grip)."""
    if task == "door":
        path = plan_door_path(sim.geometry(), init.style, sim.hinge(), sim.latch())
        return [(r[:3].copy(), r[3:12].reshape(3, 3).copy(), float(r[12])) for r in path]
    path = plan_path(init.layout, init.style)
    return [(r[:3].copy(), yaw_down_rotation(float(r[3])), float(r[4])) for r in path]


class Observer:
    """Runs natural trajectories and controlled cells of one task's simulator and renders them.

    One per simulator (not thread-safe). `render()` returns (agentview, wrist), each uint8
    (64, 64, 3).
    """

    def __init__(self, sim, task: str) -> None:
        self.sim, self.task = sim, task
        self.target = Target(sim, task)
        self.camera = DualCamera(sim, task=task)
        self.camera.set_draw(sample_draw(f"readout-{task}", 0))
        self.visibility = Visibility(self.target, self.camera.appearance.camera, self.camera.option,
                                     self.camera.size)
        if task == "door":
            self._latch_jnt = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_JOINT, "Door_latch_joint")
            self._latch_stiffness = float(sim.model.jnt_stiffness[self._latch_jnt])

    def render(self) -> tuple[np.ndarray, np.ndarray]:
        agent, wrist = split(self.camera.render())
        return np.ascontiguousarray(agent), np.ascontiguousarray(wrist)

    def close(self) -> None:
        self.camera.close()
        self.visibility.close()

    # ---- natural trajectories -----------------------------------------------------------
    def expert_rows(self, init: Initialization) -> list[tuple[np.ndarray, np.ndarray, float]]:
        return expert_commands(self.sim, self.task, init)

    def natural(self, init: Initialization, render_every: int):
        """Run the expert from `init`; yield (Frame, images or None) for every control step and
        the final state. Images are rendered for steps divisible by `render_every` and for the
        final state."""
        sim = self.sim
        start(sim, init)
        rows = self.expert_rows(init)
        for t in range(len(rows) + 1):
            d = sim.data
            frame = Frame(t, self.target.coordinate(), self.target.gripper_distance(),
                          d.qpos[:ARM_DOFS].copy(), d.qpos[ARM_DOFS:ARM_DOFS + 2].copy())
            last = t == len(rows)
            yield frame, (self.render() if (t % render_every == 0 or last) else None)
            if not last:
                sim.step(*rows[t])

    # ---- controlled cells ---------------------------------------------------------------
    def set_cell(self, init: Initialization, value: float, context: Frame) -> None:
        """Restore `init`, set the coordinate to `value` (task units) and the arm to `context`."""
        sim = self.sim
        m, d = sim.model, sim.data
        start(sim, init)
        d.qpos[:ARM_DOFS] = context.arm
        d.qpos[ARM_DOFS:ARM_DOFS + 2] = context.fingers
        d.qvel[:] = 0.0
        opening = float(np.clip(context.fingers[0] / GRIPPER_OPEN[0], 0.0, 1.0))
        sim.grip_cmd = 1.0 - 2.0 * opening
        d.ctrl[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN * opening
        if self.task == "door":
            d.qpos[sim.latch_adr] = DOOR_LATCH_CLEAR
        self.target.set_coordinate(value)
        mujoco.mj_forward(m, d)

    def controlled(self, init: Initialization, value: float, context: Frame,
                   render: bool = True) -> tuple[CellMeasure, tuple[np.ndarray, np.ndarray] | None]:
        """One controlled cell: set, settle under the neutral action, measure, render."""
        sim, target = self.sim, self.target
        self.set_cell(init, value, context)
        home = sim.home_q.copy()
        sim.home_q[:] = context.arm  # the nullspace posture holds the cell's arm (FIELD_NOTES)
        if self.task == "door":
            sim.model.jnt_stiffness[self._latch_jnt] = 0.0
        try:
            contact, deepest = target.contacts()
            pos, rot, grip = sim.ee_pos(), sim.ee_rot(), sim.grip_cmd
            obj_speed, joint_speed = [], []
            for _ in range(SETTLE_STEPS):
                sim.step(pos, rot, grip)
                touching, depth = target.contacts()
                contact, deepest = contact or touching, max(deepest, depth)
                obj_speed.append(target.object_speed())
                joint_speed.append(target.joint_speed())
        finally:
            sim.home_q[:] = home
            if self.task == "door":
                sim.model.jnt_stiffness[self._latch_jnt] = self._latch_stiffness
        coordinate = target.coordinate()
        measure = CellMeasure(
            target=float(value), coordinate=coordinate, drift=abs(coordinate - float(value)),
            max_object_speed=max(obj_speed[-SPEED_WINDOW:]),
            max_joint_speed=max(joint_speed[-SPEED_WINDOW:]), contact=bool(contact),
            penetration_mm=float(deepest), visible_px=self.visibility.pixels(),
            gripper_distance=target.gripper_distance(),
            state_hash=sim.state_hash())
        return measure, (self.render() if render else None)
