"""The Door simulator: robosuite's Door (latched) with an obstacle, exact restore, state hash.

Same structure as `simulator.stack_sim`: robosuite builds the model once; the
door's base pose and the obstacle are written into the model per layout; the
control loop evaluates `simulator.osc` every substep; success is robosuite's
own `Door._check_success` (hinge past 0.3 rad).
"""

from __future__ import annotations

import hashlib

import mujoco
import numpy as np

from simulator.door_scenes import DOOR_BASE_Z, DoorLayout
from simulator.errors import InvalidState
from simulator.osc import osc_control
from simulator.stack_sim import ARM_DOFS, CONTROL_FREQ, GRIPPER_OPEN, GRIPPER_SPEED, OBSTACLE_NAME

OBSTACLE_PARKED = (2.0, 0.0, 0.5)
MAX_PENETRATION_M = 0.001
"""Deepest contact allowed between two bodies of a restored state (issue 38)."""
STILL_TOLERANCE_RAD = {"hinge": 0.002, "latch": 0.01}
"""Largest motion of each door joint allowed over `STILL_STEPS` of neutral control (a still
latch creeps by a few milliradians under its friction)."""
STILL_STEPS = 20
"""Neutral control steps of the stillness check: one second at 20 Hz."""


def _make_env():
    import robosuite as suite
    from robosuite.environments.manipulation.door import Door
    from robosuite.utils.mjcf_utils import new_body, new_geom

    class DoorWithObstacle(Door):
        """robosuite Door plus one static box that layouts move via `model.body_pos`."""

        def _load_model(self):
            super()._load_model()
            body = new_body(name=OBSTACLE_NAME, pos=" ".join(map(str, OBSTACLE_PARKED)))
            body.append(new_geom(name=f"{OBSTACLE_NAME}_g", type="box", size="0.04 0.04 0.1",
                                 rgba="0.45 0.45 0.5 1", group=0))
            body.append(new_geom(name=f"{OBSTACLE_NAME}_v", type="box", size="0.04 0.04 0.1",
                                 rgba="0.45 0.45 0.5 1", group=1, conaffinity=0, contype=0))
            self.model.worldbody.append(body)

    suite.environments.base.REGISTERED_ENVS.setdefault("DoorWithObstacle", DoorWithObstacle)
    return suite.make("DoorWithObstacle", robots="Panda", has_renderer=False,
                      has_offscreen_renderer=False, use_camera_obs=False, use_object_obs=False,
                      hard_reset=False, initialization_noise=None, control_freq=CONTROL_FREQ,
                      ignore_done=True, use_latch=True)


class DoorSim:
    """One Door simulator. Not thread-safe; one per worker process."""

    def __init__(self) -> None:
        self.env = _make_env()
        self.env.reset()
        self.model = self.env.sim.model._model
        self.data = self.env.sim.data._data
        m, name = self.model, mujoco.mj_name2id
        self.site = self.env.robots[0].eef_site_id["right"]
        self.home_q = np.array(self.env.robots[0].init_qpos, dtype=np.float64)
        self.door_body = name(m, mujoco.mjtObj.mjOBJ_BODY, self.env.door.root_body)
        self.hinge_adr = self.env.hinge_qpos_addr
        self.latch_adr = self.env.handle_qpos_addr
        self.handle_site = self.env.door_handle_site_id
        self.latch_body = name(m, mujoco.mjtObj.mjOBJ_BODY, self.env.door.latch_body)
        self.hinge_jnt = name(m, mujoco.mjtObj.mjOBJ_JOINT, self.env.door.joints[0])
        self.obstacle_body = name(m, mujoco.mjtObj.mjOBJ_BODY, OBSTACLE_NAME)
        self.obstacle_geoms = [name(m, mujoco.mjtObj.mjOBJ_GEOM, f"{OBSTACLE_NAME}_{s}") for s in "gv"]
        self.substeps = int(round(1.0 / CONTROL_FREQ / m.opt.timestep))
        self._jac_p = np.zeros((3, m.nv))
        self._jac_r = np.zeros((3, m.nv))
        self._mass = np.zeros((m.nv, m.nv))
        self._ctrl_lo = m.actuator_ctrlrange[:ARM_DOFS, 0].copy()
        self._ctrl_hi = m.actuator_ctrlrange[:ARM_DOFS, 1].copy()
        self.grip_cmd = -1.0

    def restore(self, layout: DoorLayout) -> None:
        """Put the simulator exactly into `layout` with the robot at home."""
        m, d = self.model, self.data
        x, y, yaw = layout.door
        m.body_pos[self.door_body] = (x, y, DOOR_BASE_Z)
        m.body_quat[self.door_body] = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        if layout.obstacle is None:
            m.body_pos[self.obstacle_body] = OBSTACLE_PARKED
            half = np.array([0.04, 0.04, 0.1])
        else:
            ox, oy, hx, hy, hz = layout.obstacle
            m.body_pos[self.obstacle_body] = (ox, oy, 0.8 + hz)
            half = np.array([hx, hy, hz])
        for g in self.obstacle_geoms:
            m.geom_size[g] = half
            m.geom_rbound[g] = float(np.linalg.norm(half))
            m.geom_aabb[g] = np.concatenate([np.zeros(3), half])
        mujoco.mj_resetData(m, d)
        d.qpos[:ARM_DOFS] = self.home_q
        d.qpos[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN
        d.qpos[self.hinge_adr] = layout.hinge
        d.qpos[self.latch_adr] = layout.latch
        d.ctrl[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN
        self.grip_cmd = -1.0
        mujoco.mj_forward(m, d)

    def state_hash(self) -> str:
        """SHA-256 of the integration state plus the door's and obstacle's model placement."""
        m, d = self.model, self.data
        state = np.empty(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION))
        mujoco.mj_getState(m, d, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        h = hashlib.sha256(state.tobytes())
        for arr in (m.body_pos[self.door_body], m.body_quat[self.door_body],
                    m.body_pos[self.obstacle_body], m.geom_size[self.obstacle_geoms[0]]):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()

    def ee_pos(self) -> np.ndarray:
        return self.data.site_xpos[self.site].copy()

    def ee_rot(self) -> np.ndarray:
        return self.data.site_xmat[self.site].reshape(3, 3).copy()

    def hinge(self) -> float:
        return float(self.data.qpos[self.hinge_adr])

    def latch(self) -> float:
        return float(self.data.qpos[self.latch_adr])

    def geometry(self) -> dict:
        """What the expert perceives: handle point, latch centre and axis, hinge anchor and axis."""
        d = self.data
        return {"handle": d.site_xpos[self.handle_site].copy(),
                "latch_center": d.xpos[self.latch_body].copy(),
                "latch_axis": d.xmat[self.latch_body].reshape(3, 3)[:, 1].copy(),
                "hinge_anchor": d.xanchor[self.hinge_jnt].copy(),
                "hinge_axis": d.xaxis[self.hinge_jnt].copy()}

    def success(self) -> bool:
        """robosuite's own Door success check (hinge past 0.3 rad)."""
        mujoco.mj_forward(self.model, self.data)
        return bool(self.env._check_success())

    def step(self, goal_pos: np.ndarray, goal_rot: np.ndarray, grip: float) -> None:
        """One 20 Hz control step towards an absolute end-effector pose; grip -1 open, +1 closed."""
        m, d = self.model, self.data
        self.grip_cmd = float(np.clip(self.grip_cmd + np.clip(grip - self.grip_cmd, -GRIPPER_SPEED,
                                                                GRIPPER_SPEED), -1.0, 1.0))
        d.ctrl[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN * 0.5 * (1.0 - self.grip_cmd)
        goal_pos = np.ascontiguousarray(goal_pos, dtype=np.float64)
        goal_rot = np.ascontiguousarray(goal_rot, dtype=np.float64)
        for _ in range(self.substeps):
            mujoco.mj_step1(m, d)
            mujoco.mj_jacSite(m, d, self._jac_p, self._jac_r, self.site)
            mujoco.mj_fullM(m, self._mass, d.qM)
            osc_control(self._jac_p, self._jac_r, self._mass, d.qfrc_bias, d.qpos, d.qvel, self.home_q,
                        d.site_xpos[self.site], d.site_xmat[self.site], goal_pos, goal_rot,
                        self._ctrl_lo, self._ctrl_hi, d.ctrl)
            mujoco.mj_step2(m, d)


def deepest_contact(sim: DoorSim) -> tuple[float, str]:
    """(penetration depth in m, "body/body") of the deepest contact between two bodies now;
    (0.0, "") when no two bodies interpenetrate."""
    m, d = sim.model, sim.data
    depth, pair = 0.0, ""
    for contact in d.contact[:d.ncon]:
        b1, b2 = m.geom_bodyid[contact.geom1], m.geom_bodyid[contact.geom2]
        if b1 != b2 and -contact.dist > depth:
            depth = -float(contact.dist)
            pair = "/".join(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in (b1, b2))
    return depth, pair


def check_valid_state(sim: DoorSim, layout: DoorLayout, name: str) -> None:
    """Raise `InvalidState` unless `layout` restores without interpenetration deeper than
    `MAX_PENETRATION_M` and its hinge and latch stay within `STILL_TOLERANCE_RAD` over one
    second of neutral control (the hand held at home, gripper open). Leaves `sim` restored."""
    sim.restore(layout)
    depth, pair = deepest_contact(sim)
    if depth > MAX_PENETRATION_M:
        sim.restore(layout)
        raise InvalidState(f"{name}: {pair} interpenetrate by {depth * 1000:.1f} mm at the start "
                           f"(at most {MAX_PENETRATION_M * 1000:.0f} mm)")
    hinge, latch, pos, rot = sim.hinge(), sim.latch(), sim.ee_pos(), sim.ee_rot()
    for _ in range(STILL_STEPS):
        sim.step(pos, rot, -1.0)
    moved = {"hinge": sim.hinge() - hinge, "latch": sim.latch() - latch}
    sim.restore(layout)
    for joint, delta in moved.items():
        if abs(delta) > STILL_TOLERANCE_RAD[joint]:
            raise InvalidState(f"{name}: the {joint} moves by {delta:+.4f} rad in one second of "
                               f"neutral control (at most {STILL_TOLERANCE_RAD[joint]} rad)")
