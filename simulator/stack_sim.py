"""The Stack simulator: robosuite's model, exact restore, state hash, a lean control loop.

robosuite builds the model (Panda, OSC pose, Stack arena, cubes) once, with a
static obstacle box merged in; episodes then run directly on the MuJoCo
model/data with `simulator.osc` evaluated every substep (mj_step1 -> control ->
mj_step2), which keeps robosuite's maths and drops its per-step overhead.
Success is robosuite's own `Stack._check_success` on the same data.
"""

from __future__ import annotations

import hashlib

import mujoco
import numpy as np

from simulator.osc import osc_control
from simulator.stack_scenes import CUBE_A_HALF, CUBE_B_HALF, OBSTACLE_PARKED, TABLE_TOP_Z, StackLayout

CONTROL_FREQ = 20
"""Control steps per second (robosuite's default 20 Hz)."""
ARM_DOFS = 7
GRIPPER_OPEN = np.array([0.04, -0.04])
"""Finger position targets (actuator ctrl) for an open gripper."""
GRIPPER_SPEED = 0.2
"""Change of the normalised gripper command per control step (full close in ~10 steps)."""
OBSTACLE_NAME = "obstacle"


def _make_env():
    """Build robosuite's Stack with a static obstacle box; imported lazily (robosuite is heavy)."""
    import robosuite as suite
    from robosuite.environments.manipulation.stack import Stack
    from robosuite.utils.mjcf_utils import new_body, new_geom

    class StackWithObstacle(Stack):
        """robosuite Stack plus one static box that layouts move via `model.body_pos`."""

        def _load_model(self):
            super()._load_model()
            body = new_body(name=OBSTACLE_NAME, pos=" ".join(map(str, OBSTACLE_PARKED)))
            body.append(new_geom(name=f"{OBSTACLE_NAME}_g", type="box", size="0.04 0.04 0.1",
                                 rgba="0.45 0.45 0.5 1", group=0, friction="1 0.005 0.0001"))
            body.append(new_geom(name=f"{OBSTACLE_NAME}_v", type="box", size="0.04 0.04 0.1",
                                 rgba="0.45 0.45 0.5 1", group=1, conaffinity=0, contype=0))
            self.model.worldbody.append(body)

    suite.environments.base.REGISTERED_ENVS.setdefault("StackWithObstacle", StackWithObstacle)
    return suite.make("StackWithObstacle", robots="Panda", has_renderer=False,
                      has_offscreen_renderer=False, use_camera_obs=False, use_object_obs=False,
                      hard_reset=False, initialization_noise=None, control_freq=CONTROL_FREQ,
                      ignore_done=True, reward_shaping=False)


class StackSim:
    """One Stack simulator. Not thread-safe; one per worker process."""

    def __init__(self) -> None:
        self.env = _make_env()
        self.env.reset()
        self.model = self.env.sim.model._model
        self.data = self.env.sim.data._data
        m = self.model
        name = mujoco.mj_name2id
        self.site = self.env.robots[0].eef_site_id["right"]
        self.home_q = np.array(self.env.robots[0].init_qpos, dtype=np.float64)
        self.qadr_a = m.jnt_qposadr[name(m, mujoco.mjtObj.mjOBJ_JOINT, "cubeA_joint0")]
        self.qadr_b = m.jnt_qposadr[name(m, mujoco.mjtObj.mjOBJ_JOINT, "cubeB_joint0")]
        self.obstacle_body = name(m, mujoco.mjtObj.mjOBJ_BODY, OBSTACLE_NAME)
        self.obstacle_geoms = [name(m, mujoco.mjtObj.mjOBJ_GEOM, f"{OBSTACLE_NAME}_{s}") for s in "gv"]
        self.substeps = int(round(1.0 / CONTROL_FREQ / m.opt.timestep))
        self._jac_p = np.zeros((3, m.nv))
        self._jac_r = np.zeros((3, m.nv))
        self._mass = np.zeros((m.nv, m.nv))
        self._ctrl_lo = m.actuator_ctrlrange[:ARM_DOFS, 0].copy()
        self._ctrl_hi = m.actuator_ctrlrange[:ARM_DOFS, 1].copy()
        self.grip_cmd = -1.0

    # ---- state -------------------------------------------------------------------------
    def restore(self, layout: StackLayout) -> None:
        """Put the simulator exactly into `layout` with the robot at home (bit-identical each time)."""
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        d.qpos[:ARM_DOFS] = self.home_q
        d.qpos[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN
        for adr, (x, y, yaw), half in ((self.qadr_a, layout.cube_a, CUBE_A_HALF),
                                       (self.qadr_b, layout.cube_b, CUBE_B_HALF)):
            d.qpos[adr:adr + 3] = (x, y, TABLE_TOP_Z + half)
            d.qpos[adr + 3:adr + 7] = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        self._place_obstacle(layout.obstacle)
        d.ctrl[:ARM_DOFS] = 0.0
        d.ctrl[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN
        self.grip_cmd = -1.0
        mujoco.mj_forward(m, d)

    def _place_obstacle(self, obstacle) -> None:
        m = self.model
        if obstacle is None:
            m.body_pos[self.obstacle_body] = OBSTACLE_PARKED
            half = np.array([0.04, 0.04, 0.1])
        else:
            ox, oy, hx, hy, hz = obstacle
            m.body_pos[self.obstacle_body] = (ox, oy, TABLE_TOP_Z + hz)
            half = np.array([hx, hy, hz])
        for g in self.obstacle_geoms:
            m.geom_size[g] = half
            m.geom_rbound[g] = float(np.linalg.norm(half))
            m.geom_aabb[g] = np.concatenate([np.zeros(3), half])

    def state_hash(self) -> str:
        """SHA-256 of the full integration state plus the obstacle's model fields.

        The obstacle's pose and size live in the model, not in qpos, so they are
        part of the hash; appearance (colours, lights, camera) is deliberately not.
        """
        m, d = self.model, self.data
        size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION)
        state = np.empty(size)
        mujoco.mj_getState(m, d, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        h = hashlib.sha256(state.tobytes())
        h.update(np.ascontiguousarray(m.body_pos[self.obstacle_body]).tobytes())
        h.update(np.ascontiguousarray(m.geom_size[self.obstacle_geoms[0]]).tobytes())
        return h.hexdigest()

    # ---- reading ------------------------------------------------------------------------
    def ee_pos(self) -> np.ndarray:
        return self.data.site_xpos[self.site].copy()

    def ee_rot(self) -> np.ndarray:
        return self.data.site_xmat[self.site].reshape(3, 3).copy()

    def cube_pos(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        return d.qpos[self.qadr_a:self.qadr_a + 3].copy(), d.qpos[self.qadr_b:self.qadr_b + 3].copy()

    def flat_state(self) -> np.ndarray:
        """robosuite's flattened state (time, qpos, qvel), as robomimic stores it."""
        d = self.data
        return np.concatenate([[d.time], d.qpos, d.qvel])

    def success(self) -> bool:
        """robosuite's own Stack success check, on the current data."""
        mujoco.mj_forward(self.model, self.data)
        return bool(self.env._check_success())

    # ---- control ------------------------------------------------------------------------
    def step(self, goal_pos: np.ndarray, goal_rot: np.ndarray, grip: float) -> None:
        """One 20 Hz control step towards an absolute end-effector pose; grip -1 open, +1 closed."""
        m, d = self.model, self.data
        self.grip_cmd = float(np.clip(self.grip_cmd + np.clip(grip - self.grip_cmd, -GRIPPER_SPEED,
                                                                GRIPPER_SPEED), -1.0, 1.0))
        opening = 0.5 * (1.0 - self.grip_cmd)
        d.ctrl[ARM_DOFS:ARM_DOFS + 2] = GRIPPER_OPEN * opening
        lo, hi = self._ctrl_lo, self._ctrl_hi
        jac_p, jac_r, mass, site, home = self._jac_p, self._jac_r, self._mass, self.site, self.home_q
        goal_pos = np.ascontiguousarray(goal_pos, dtype=np.float64)
        goal_rot = np.ascontiguousarray(goal_rot, dtype=np.float64)
        for _ in range(self.substeps):
            mujoco.mj_step1(m, d)
            mujoco.mj_jacSite(m, d, jac_p, jac_r, site)
            mujoco.mj_fullM(m, mass, d.qM)
            osc_control(jac_p, jac_r, mass, d.qfrc_bias, d.qpos, d.qvel, home, d.site_xpos[site],
                        d.site_xmat[site], goal_pos, goal_rot, lo, hi, d.ctrl)
            mujoco.mj_step2(m, d)
