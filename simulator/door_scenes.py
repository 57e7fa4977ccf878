"""Physical layouts of the Door task: the door's base pose, its articulation and an obstacle.

The door's base pose is not in qpos: it is written into the model
(`body_pos`/`body_quat`) like robosuite's own reset does, at the height that
puts the door's bottom on the table. Layout levels (AUDIT_SPEC): 0 nominal
(1 cm jitter), 1 displaced (x up to +-12 cm, y up to +-6 cm so the handle stays
reachable, yaw +-0.1 rad), 2 articulated (the door starts ajar, 0.03-0.2 rad,
the latch turned 0-0.6 rad, as drawn; version 2 of the query states keeps only a hinge and
latch that clear the frame and stay still: `valid_articulation`), 3 an obstacle box on the
table under the pull arc.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from simulator.errors import BadLevel, UnknownQuerySet, UnknownQuerySetVersion

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


CLEAR_HINGE = 0.19
"""Smallest hinge angle (rad) at which the latch clears `Door_frame` at every latch angle in
`STILL_LATCH` (measured, issue 38): an ajar state's own hinge draw is kept from here up."""
AJAR_HINGE = (0.2, 0.28)
"""Range (rad) a hinge below `CLEAR_HINGE` is re-drawn from: clear of the frame with a margin,
and below 0.3 rad, where robosuite counts the door open."""
STILL_LATCH = (0.0, 0.08)
"""Latch range (rad) that stays put: its spring (stiffness 1) pulls with less than its
frictionloss (0.1). A latch turned further, even to 1.35 rad where it clears the frame,
springs back within the second and kicks the door by 0.3-3.4 degrees."""
QUERY_SET_VERSIONS = (1, 2)
"""Versions of the Door query states. 1: as first drawn (data version 0.1.0), whose level-2
states start with the latch inside the frame (issue 38); 2: the same draws with every ajar
state made valid by `valid_articulation`, all other states unchanged."""
QUERY_SET_VERSION = QUERY_SET_VERSIONS[-1]
"""The version the generator writes."""


def valid_articulation(layout: DoorLayout, state_id: str) -> DoorLayout:
    """`layout` with a hinge and latch angle that clear the frame and stay still.

    The state's own hinge is kept when it clears the frame (`CLEAR_HINGE` up to
    `AJAR_HINGE[1]`) and its own latch when it stays still (`STILL_LATCH`); each other one is
    drawn from a generator seeded by the state's own id, both numbers drawn always in the
    same order, so the choice is deterministic and the query set's shared stream (every
    other state and draw) is not touched."""
    seed = int.from_bytes(hashlib.sha256(f"articulation:{state_id}".encode()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    hinge_draw, latch_draw = float(rng.uniform(*AJAR_HINGE)), float(rng.uniform(*STILL_LATCH))
    hinge = layout.hinge if CLEAR_HINGE <= layout.hinge < AJAR_HINGE[1] else hinge_draw
    latch = layout.latch if STILL_LATCH[0] <= layout.latch <= STILL_LATCH[1] else latch_draw
    return replace(layout, hinge=hinge, latch=latch)


def versioned_states(states, version: int) -> tuple:
    """`states` (level-major, as drawn) as of query-set `version`: version 2 makes each ajar
    (level-2) state valid by `valid_articulation`; the other levels are the same in every version."""
    if version not in QUERY_SET_VERSIONS:
        raise UnknownQuerySetVersion(f"query set version must be one of {QUERY_SET_VERSIONS}, "
                                     f"got {version!r}")
    if version == 1:
        return tuple(states)
    return tuple(replace(s, layout=valid_articulation(s.layout, s.state_id)) if s.layout_level == 2
                 else s for s in states)


@dataclass(frozen=True)
class DoorQueryState:
    state_id: str
    layout_level: int
    layout: DoorLayout


def door_query_states(query_set: str, version: int = QUERY_SET_VERSION) -> tuple[DoorQueryState, ...]:
    """The 40 states (10 per level, level-major) of a Door query set, as of `version`."""
    if query_set not in QUERY_SET_SEEDS:
        raise UnknownQuerySet(f"unknown Door query set {query_set!r}; known: {', '.join(QUERY_SET_SEEDS)}")
    rng = np.random.default_rng(QUERY_SET_SEEDS[query_set])
    drawn = [DoorQueryState(f"{query_set}-s{lv * N_STATES_PER_LEVEL + j:02d}", lv,
                            sample_door_layout(lv, rng))
             for lv in LEVELS for j in range(N_STATES_PER_LEVEL)]
    return versioned_states(drawn, version)
