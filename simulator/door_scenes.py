"""Physical layouts of the Door task: the door's base pose, its articulation and an obstacle.

The door's base pose is not in qpos: it is written into the model
(`body_pos`/`body_quat`) like robosuite's own reset does, at the height that
puts the door's bottom on the table. Layout levels (AUDIT_SPEC): 0 nominal
(1 cm jitter), 1 displaced (x up to +-12 cm, y up to +-6 cm so the handle stays
reachable, yaw +-0.1 rad), 2 articulated (the door starts ajar, 0.03-0.2 rad,
the latch turned 0-0.6 rad), 3 an obstacle box on the table under the pull arc.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from simulator.errors import BadLevel, UnknownQuerySet

NOMINAL_DOOR = (-0.128, -0.356, -np.pi / 2 - 0.125)
"""Nominal door base pose (x, y, yaw): the middle of robosuite's Door placement range."""
DOOR_BASE_Z = 1.1
"""Height of the door's base body: table top (0.8) plus the door's bottom offset (0.3)."""
LEVELS = (0, 1, 2, 3)
N_STATES_PER_LEVEL = 10
QUERY_SET_SEEDS = {"door-orig": 4004, "door-fresh": 5005}
"""Generator seeds of the Door query sets."""


@dataclass(frozen=True)
class DoorLayout:
    """Door base pose (x, y, yaw), initial hinge and latch angles, optional obstacle.

    `obstacle` is None or (x, y, half_x, half_y, half_z), a static box on the table.
    """

    door: tuple[float, float, float]
    hinge: float = 0.0
    latch: float = 0.0
    obstacle: tuple[float, float, float, float, float] | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "DoorLayout":
        obstacle = data.get("obstacle")
        return cls(door=tuple(float(v) for v in data["door"]), hinge=float(data.get("hinge", 0.0)),
                   latch=float(data.get("latch", 0.0)),
                   obstacle=None if obstacle is None else tuple(float(v) for v in obstacle))

    def key(self) -> str:
        """A short stable digest of the layout numbers (not the simulator state hash)."""
        text = repr((self.door, self.hinge, self.latch, self.obstacle)).encode()
        return hashlib.sha256(text).hexdigest()[:16]


def sample_door_layout(level: int, rng: np.random.Generator) -> DoorLayout:
    """Draw one Door layout of the given level (0-3)."""
    if level not in LEVELS:
        raise BadLevel(f"layout level must be one of {LEVELS}, got {level!r}")
    x, y, yaw = NOMINAL_DOOR
    if level == 0:
        j = rng.uniform(-0.01, 0.01, size=2)
        return DoorLayout((x + j[0], y + j[1], yaw + rng.uniform(-0.03, 0.03)))
    if level == 1:
        return DoorLayout((x + rng.uniform(-0.12, 0.12), y + rng.uniform(-0.06, 0.06),
                           yaw + rng.uniform(-0.1, 0.1)))
    if level == 2:
        j = rng.uniform(-0.02, 0.02, size=2)
        return DoorLayout((x + j[0], y + j[1], yaw + rng.uniform(-0.05, 0.05)),
                          hinge=float(rng.uniform(0.03, 0.2)), latch=float(rng.uniform(0.0, 0.6)))
    j = rng.uniform(-0.02, 0.02, size=2)
    door = (x + j[0], y + j[1], yaw + rng.uniform(-0.05, 0.05))
    obstacle = (door[0] - 0.05 + rng.uniform(-0.06, 0.06), door[1] + rng.uniform(0.2, 0.3),
                float(rng.uniform(0.02, 0.04)), float(rng.uniform(0.02, 0.04)),
                float(rng.uniform(0.04, 0.1)))
    return DoorLayout(door, obstacle=tuple(float(v) for v in obstacle))


AJAR_HINGE = (0.2, 0.28)
"""Hinge range (rad) of a valid ajar door: from 0.19 rad up the latch clears `Door_frame` at
every latch angle the spring leaves still, and below 0.3 rad robosuite does not yet count
the door open (issue 38)."""
STILL_LATCH = (0.0, 0.08)
"""Latch range (rad) that stays put: its spring (stiffness 1) pulls with less than its
frictionloss (0.1). A latch turned further, even to 1.35 rad where it clears the frame,
springs back within the second and kicks the door by 0.3-3.4 degrees."""


def valid_articulation(layout: DoorLayout, state_id: str) -> DoorLayout:
    """`layout` with a hinge and latch angle that clear the frame and stay still, drawn from a
    generator seeded by the state's own id (the query set's shared stream is not touched, so
    every other state and draw stays as it was)."""
    seed = int.from_bytes(hashlib.sha256(f"articulation:{state_id}".encode()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    return replace(layout, hinge=float(rng.uniform(*AJAR_HINGE)), latch=float(rng.uniform(*STILL_LATCH)))


@dataclass(frozen=True)
class DoorQueryState:
    state_id: str
    layout_level: int
    layout: DoorLayout


def door_query_states(query_set: str) -> tuple[DoorQueryState, ...]:
    """The 40 states (10 per level, level-major) of a Door query set."""
    if query_set not in QUERY_SET_SEEDS:
        raise UnknownQuerySet(f"unknown Door query set {query_set!r}; known: {', '.join(QUERY_SET_SEEDS)}")
    rng = np.random.default_rng(QUERY_SET_SEEDS[query_set])
    return tuple(DoorQueryState(f"{query_set}-s{lv * N_STATES_PER_LEVEL + j:02d}", lv,
                                sample_door_layout(lv, rng))
                 for lv in LEVELS for j in range(N_STATES_PER_LEVEL))
