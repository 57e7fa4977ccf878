"""Operational-space pose control for the Panda arm, compiled with numba.

The maths are robosuite 1.5's `OperationalSpaceController` (OSC_POSE, fixed
impedance, uncoupled position/orientation, kp = 150, critical damping, a joint
nullspace term with kp = 10 towards the initial joints, gravity and Coriolis
compensation), evaluated once per physics substep as robosuite does. What is
left out is robosuite's per-step bookkeeping (observables, proprioceptive
buffers, Python dictionaries), which is where its ~6 ms per control step goes.
Goals are absolute world poses; robosuite's delta actions are converted to
them by the caller.
"""

from __future__ import annotations

import numpy as np
from numba import njit

KP = 150.0
"""Task-space stiffness (robosuite's default OSC_POSE kp)."""
KD = 2.0 * np.sqrt(KP)
"""Critical damping (damping_ratio = 1)."""
KP_NULL = 10.0
"""Stiffness of the nullspace posture term (robosuite's `nullspace_torques` default)."""


@njit(cache=True)
def orientation_error(desired: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle-like error between two rotation matrices (robosuite's definition)."""
    err = np.zeros(3)
    for k in range(3):
        err += np.cross(current[:, k], desired[:, k])
    return 0.5 * err


@njit(cache=True)
def osc_torques(jac_p, jac_r, mass, bias, q, qd, q0, pos, rot, goal_pos, goal_rot):
    """Joint torques that drive the end-effector site to (goal_pos, goal_rot).

    Parameters
    ----------
    jac_p, jac_r : (3, n) translational / rotational Jacobians of the site, arm dofs only.
    mass : (n, n) joint-space inertia of the arm dofs.
    bias : (n,) Coriolis, centrifugal and gravity forces (qfrc_bias) of the arm dofs.
    q, qd, q0 : (n,) joint positions, velocities, nullspace posture.
    pos, rot : site position (3,) and rotation matrix (3, 3).
    goal_pos, goal_rot : target position (3,) and rotation matrix (3, 3).
    """
    minv = np.linalg.inv(mass)
    vel = jac_p @ qd
    ang = jac_r @ qd
    force = KP * (goal_pos - pos) - KD * vel
    torque = KP * orientation_error(goal_rot, rot) - KD * ang
    lam_pos = np.linalg.inv(jac_p @ minv @ jac_p.T)
    lam_ori = np.linalg.inv(jac_r @ minv @ jac_r.T)
    jac = np.vstack((jac_p, jac_r))
    lam_full = np.linalg.inv(jac @ minv @ jac.T)
    tau = jac_p.T @ (lam_pos @ force) + jac_r.T @ (lam_ori @ torque) + bias
    jbar = minv @ jac.T @ lam_full
    null = np.eye(q.shape[0]) - jbar @ jac
    posture = mass @ (KP_NULL * (q0 - q) - 2.0 * np.sqrt(KP_NULL) * qd)
    return tau + null.T @ posture


@njit(cache=True)
def osc_control(jac_p_full, jac_r_full, mass_full, qfrc_bias, qpos, qvel, q0, site_pos, site_mat,
                goal_pos, goal_rot, lo, hi, ctrl):
    """One substep of arm control, written into `ctrl[:n]` (n = len(q0)), clipped to [lo, hi].

    Takes MuJoCo's full arrays (Jacobians (3, nv), inertia (nv, nv), qfrc_bias,
    qpos, qvel, the site's position (3,) and flattened rotation (9,)) and slices
    the arm dofs here, so one compiled call replaces the Python glue.
    """
    n = q0.shape[0]
    tau = osc_torques(np.ascontiguousarray(jac_p_full[:, :n]), np.ascontiguousarray(jac_r_full[:, :n]),
                      np.ascontiguousarray(mass_full[:n, :n]), qfrc_bias[:n].copy(), qpos[:n].copy(),
                      qvel[:n].copy(), q0, site_pos.copy(), site_mat.copy().reshape(3, 3),
                      goal_pos, goal_rot)
    for k in range(n):
        ctrl[k] = min(max(tau[k], lo[k]), hi[k])


def yaw_down_rotation(yaw: float) -> np.ndarray:
    """Gripper pointing down (robosuite's Panda home orientation) turned by `yaw` about world z."""
    c, s = np.cos(yaw), np.sin(yaw)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    down = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    return rz @ down
