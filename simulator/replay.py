"""Replay: a recorded end-effector path retargeted to a query's object poses, run open loop.

Retargeting (per control step, by the phase the recording stored):
grasp steps are shifted by cube A's displacement (query minus base scene),
place steps by cube B's, transport steps by a blend that moves linearly from
A's shift to B's; the approach from home blends from no shift to A's. Only
positions are retargeted: the gripper's orientation is replayed as recorded,
so a query cube turned away from the base scene's cube is grasped off-axis
(one of the ways an experience fits some scenes better than others). Replay
never looks at the camera or the obstacle: it is executed once per physical
state and seed.

Execution noise (the seed's meaning): two constant end-effector offsets,
N(0, 8 mm) in x and y, one for the grasp side of the path and one for the
transport and place side (so a grasp error is not cancelled at placement), an
independent per-step jitter (N(0, 2 mm) per axis) and a delay of the gripper
commands of 0-2 control steps. The generator is seeded by (seed, experience id, state id), so the same
cell always gives the same outcome and different seeds give independent noise.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from simulator.osc import yaw_down_rotation
from simulator.stack_scenes import StackLayout
from simulator.stack_expert import HOME_EE, PHASE_GRASP, PHASE_PLACE, PHASE_TRANSPORT

EPISODE_OFFSET_STD = 0.008
"""Std of the per-episode constant end-effector offset in x and y (m)."""
STEP_JITTER_STD = 0.002
"""Std of the per-step target jitter, each axis (m)."""
MAX_GRIP_DELAY = 2
"""Largest delay of the gripper commands (control steps)."""


@dataclass(frozen=True)
class ExecutionNoise:
    """The noise of one episode, fully determined by its seed material."""

    offset: np.ndarray  # (2, 2): grasp-side and place-side offsets (x, y)
    jitter: np.ndarray  # (T, 3)
    grip_delay: int


def noise_for(seed: int, experience_id: str, state_id: str, n_steps: int) -> ExecutionNoise:
    """The execution noise of cell (experience, state, seed)."""
    material = [int(seed), zlib.crc32(experience_id.encode()), zlib.crc32(state_id.encode())]
    rng = np.random.default_rng(np.random.SeedSequence(material))
    return ExecutionNoise(offset=rng.normal(0.0, EPISODE_OFFSET_STD, size=(2, 2)),
                          jitter=rng.normal(0.0, STEP_JITTER_STD, size=(n_steps, 3)),
                          grip_delay=int(rng.integers(0, MAX_GRIP_DELAY + 1)))


def retarget(path: np.ndarray, base: StackLayout, query: StackLayout) -> np.ndarray:
    """The recorded path (T, 6: x, y, z, yaw, grip, phase) moved to the query's cube poses."""
    out = path.copy()
    shift_a = np.subtract(query.cube_a[:2], base.cube_a[:2])
    shift_b = np.subtract(query.cube_b[:2], base.cube_b[:2])
    phase = path[:, 5].astype(int)
    grip_closed = path[:, 4] > 0
    first_close = int(np.argmax(grip_closed)) if grip_closed.any() else len(path)
    weight = np.zeros(len(path))
    approach = np.arange(len(path)) < first_close
    # the approach from home: shift grows while the end-effector moves towards A
    if first_close > 0:
        start = HOME_EE[:2]
        total = np.linalg.norm(path[first_close - 1, :2] - start) + 1e-9
        progress = np.linalg.norm(path[:first_close, :2] - start, axis=1) / total
        weight[:first_close] = np.clip(progress, 0.0, 1.0)
    out[:, :2] += np.outer(np.where(approach, weight, 0.0), shift_a)
    grasp_rows = (phase == PHASE_GRASP) & ~approach
    out[grasp_rows, :2] += shift_a
    transport = np.flatnonzero(phase == PHASE_TRANSPORT)
    if transport.size:
        t = (np.arange(transport.size) + 1) / transport.size
        out[transport, :2] += np.outer(1 - t, shift_a) + np.outer(t, shift_b)
    out[phase == PHASE_PLACE, :2] += shift_b
    return out


def apply_noise(path: np.ndarray, noise: ExecutionNoise) -> np.ndarray:
    """The path the arm is actually commanded to follow under `noise`."""
    out = path.copy()
    place_side = path[:, 5] >= PHASE_TRANSPORT
    out[~place_side, :2] += noise.offset[0]
    out[place_side, :2] += noise.offset[1]
    out[:, :3] += noise.jitter[: len(path)]
    if noise.grip_delay:
        out[noise.grip_delay:, 4] = path[:-noise.grip_delay, 4]
        out[:noise.grip_delay, 4] = path[0, 4]
    return out


def execute_path(sim, path: np.ndarray) -> None:
    """Drive the simulator along an absolute target path (one row per control step)."""
    rot_cache: dict[float, np.ndarray] = {}
    for row in path:
        yaw = float(row[3])
        rot = rot_cache.get(yaw)
        if rot is None:
            rot = rot_cache[yaw] = yaw_down_rotation(yaw)
        sim.step(row[:3].copy(), rot, float(row[4]))


def replay_episode(sim, path: np.ndarray, base: StackLayout, query: StackLayout, *,
                   seed: int, experience_id: str, state_id: str) -> bool:
    """Run one Replay cell from the query's exact initial state; returns robosuite's success."""
    sim.restore(query)
    moved = retarget(path, base, query)
    noisy = apply_noise(moved, noise_for(seed, experience_id, state_id, len(moved)))
    execute_path(sim, noisy)
    return sim.success()
