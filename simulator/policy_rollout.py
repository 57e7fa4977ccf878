"""A closed-loop policy episode: render, act, step, until success or the horizon.

Every control step renders the policy camera under the scene's appearance
draw, so each render of a state is its own episode (no deduplication across
draws). The episode ends at the first control step after which robosuite's
success check holds (checked every `SUCCESS_EVERY` steps), or at the horizon.

Execution noise (the seed's meaning, as for Replay): a constant offset of the
commanded end-effector position, N(0, `OFFSET_STD`) in x and y, and a per-step
jitter N(0, `JITTER_STD`) per axis, drawn from a generator seeded by
(seed, experience id, scene id); so (experience, scene, seed) always gives the
same outcome.

Inference runs one environment per actor on the CPU: batching several
environments into one forward pass can change the last bits of an action
with the batch's composition, and a closed loop amplifies that into a
different trajectory. A GPU runner batches (`run_batch`), which is
deterministic per batch layout; its cells record the device.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import mujoco
import numpy as np

from simulator.appearance import AppearanceDraw
from simulator.recording import DELTA_POS_SCALE, DELTA_ROT_SCALE

OFFSET_STD = 0.004
"""Std of the per-episode constant offset of the commanded position (m, x and y)."""
JITTER_STD = 0.002
"""Std of the per-step jitter of the commanded position (m, each axis)."""
SUCCESS_EVERY = 4
"""Control steps between success checks."""
HORIZON = {"stack": 130, "door": 160}
"""Largest number of control steps of a policy episode, per task: 1.3 times the longest
expert path of the task's K=3 experiences (Stack 100 steps, Door 124)."""


@dataclass(frozen=True)
class EpisodeNoise:
    offset: np.ndarray  # (2,)
    jitter: np.ndarray  # (horizon, 3)


def noise_for(seed: int, experience_id: str, scene_id: str, horizon: int) -> EpisodeNoise:
    """The execution noise of cell (experience, scene, seed)."""
    material = [int(seed), zlib.crc32(experience_id.encode()), zlib.crc32(scene_id.encode()), 17]
    rng = np.random.default_rng(np.random.SeedSequence(material))
    return EpisodeNoise(offset=rng.normal(0.0, OFFSET_STD, size=2),
                        jitter=rng.normal(0.0, JITTER_STD, size=(horizon, 3)))


def _rotation_from_vector(vec: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(vec))
    if angle < 1e-12:
        return np.eye(3)
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, vec / angle, angle)
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)


def command(sim, action: np.ndarray, noise: EpisodeNoise, t: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The absolute OSC goal (position, rotation, gripper) of a delta action under noise."""
    pos, rot = sim.ee_pos(), sim.ee_rot()
    goal = pos + np.clip(action[:3], -1, 1) * DELTA_POS_SCALE + noise.jitter[t]
    goal[:2] += noise.offset
    goal_rot = _rotation_from_vector(np.clip(action[3:6], -1, 1) * DELTA_ROT_SCALE) @ rot
    return goal, goal_rot, float(np.clip(action[6], -1, 1))


@dataclass(frozen=True)
class EpisodeResult:
    success: bool
    steps: int


def run_batch(sims, cameras, actor, starts, draws: list[AppearanceDraw], noises: list[EpisodeNoise],
              horizon: int) -> list[EpisodeResult]:
    """Run len(sims) episodes in lockstep with one batched policy; `starts[i]` restores sim i."""
    n = len(sims)
    for sim, camera, start, draw in zip(sims, cameras, starts, draws):
        camera.set_draw(draw)
        start(sim)
    actor.reset()
    done = [False] * n
    success = [False] * n
    steps = [horizon] * n
    images = [camera.render() for camera in cameras]
    for t in range(horizon):
        eef = np.stack([sim.ee_pos() for sim in sims])
        grip = np.stack([sim.data.qpos[7:9] for sim in sims])
        actions = actor.act(np.stack(images), eef, grip)
        for i, sim in enumerate(sims):
            if done[i]:
                continue
            sim.step(*command(sim, actions[i], noises[i], t))
            if (t + 1) % SUCCESS_EVERY == 0 and sim.success():
                done[i], success[i], steps[i] = True, True, t + 1
            else:
                images[i] = cameras[i].render()
        if all(done):
            break
    return [EpisodeResult(s, k) for s, k in zip(success, steps)]


def run_episode(sim, camera, actor, start, draw: AppearanceDraw, noise: EpisodeNoise,
                horizon: int) -> EpisodeResult:
    """One episode (a batch of one)."""
    return run_batch([sim], [camera], actor, [start], [draw], [noise], horizon)[0]
