"""Physical layouts of the Stack task: data that fixes a simulator state exactly.

A layout is the cube poses and the obstacle (pose and size); the robot always
starts at robosuite's Panda home configuration with the gripper open. Layout
levels follow AUDIT_SPEC: 0 nominal, 1 both cubes displaced together (up to
+-12 cm), 2 cubes displaced independently (relative displacement), 3 an
obstacle between the cubes. Layouts are drawn from seeded generators, so a
query set is a pure function of its id.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

import numpy as np

from simulator.errors import BadLevel, UnknownQuerySet

TABLE_TOP_Z = 0.8
"""Height of the table surface in robosuite's Stack arena (table_offset z)."""
CUBE_A_HALF = 0.02
"""Half side of cube A (the one that is picked), as in robosuite's Stack."""
CUBE_B_HALF = 0.025
"""Half side of cube B (the one stacked on)."""
NOMINAL_A = (0.0, -0.07)
NOMINAL_B = (0.0, 0.07)
"""Nominal cube positions (x, y) on the table; level 0 jitters them by 1 cm."""
MAX_DISPLACEMENT = 0.12
"""Displacement range of levels 1-2 (AUDIT_SPEC: up to +-12 cm)."""
MIN_SEPARATION = 0.085
"""Smallest centre distance between the cubes, so that fingers fit between them."""
OBSTACLE_PARKED = (2.0, 0.0, 0.5)
"""Where the obstacle body waits when a layout has none (far outside the workspace)."""
N_STATES_PER_LEVEL = 10
LEVELS = (0, 1, 2, 3)
L3_SPREAD = 0.02
"""Level 3 moves the cubes this much further apart (y) to leave room for the obstacle."""
OBSTACLE_HALF_HEIGHT = (0.02, 0.045)
"""Range of the obstacle's half height: its top is 3-7 cm above the table, below the hand."""

QUERY_SET_SEEDS = {"stack-orig": 1001, "stack-fresh": 2002, "stack-hidden": 3003}
"""Generator seeds of the Stack query sets (fixed; a set is a pure function of its id)."""


@dataclass(frozen=True)
class StackLayout:
    """Cube poses and the obstacle of one Stack state.

    Positions are world (x, y) on the table top; yaws in radians about z.
    `obstacle` is None or (x, y, half_x, half_y, half_z): a static box on the table.
    """

    cube_a: tuple[float, float, float]
    cube_b: tuple[float, float, float]
    obstacle: tuple[float, float, float, float, float] | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "StackLayout":
        obstacle = data.get("obstacle")
        return cls(cube_a=tuple(float(v) for v in data["cube_a"]),
                   cube_b=tuple(float(v) for v in data["cube_b"]),
                   obstacle=None if obstacle is None else tuple(float(v) for v in obstacle))

    def key(self) -> str:
        """A short stable digest of the layout numbers (not the simulator state hash)."""
        text = repr((self.cube_a, self.cube_b, self.obstacle)).encode()
        return hashlib.sha256(text).hexdigest()[:16]


def _yaw(rng: np.random.Generator, spread: float) -> float:
    return float(rng.uniform(-spread, spread))


def _separated(a: tuple, b: tuple) -> bool:
    return float(np.hypot(a[0] - b[0], a[1] - b[1])) >= MIN_SEPARATION


def sample_layout(level: int, rng: np.random.Generator) -> StackLayout:
    """Draw one layout of the given level (0-3) from `rng`."""
    if level not in LEVELS:
        raise BadLevel(f"layout level must be one of {LEVELS}, got {level!r}")
    ax, ay = NOMINAL_A
    bx, by = NOMINAL_B
    if level == 0:
        j = rng.uniform(-0.01, 0.01, size=4)
        return StackLayout((ax + j[0], ay + j[1], _yaw(rng, 0.1)),
                           (bx + j[2], by + j[3], _yaw(rng, 0.1)))
    if level == 1:
        d = rng.uniform(-MAX_DISPLACEMENT, MAX_DISPLACEMENT, size=2)
        return StackLayout((ax + d[0], ay + d[1], _yaw(rng, 0.3)),
                           (bx + d[0], by + d[1], _yaw(rng, 0.3)))
    if level == 2:
        while True:
            da = rng.uniform(-MAX_DISPLACEMENT, MAX_DISPLACEMENT, size=2)
            db = rng.uniform(-MAX_DISPLACEMENT, MAX_DISPLACEMENT, size=2)
            a = (ax + da[0], ay + da[1], _yaw(rng, np.pi / 4))
            b = (bx + db[0], by + db[1], _yaw(rng, np.pi / 4))
            if _separated(a, b):
                return StackLayout(a, b)
    j = rng.uniform(-0.02, 0.02, size=4)
    a = (ax + j[0], ay - L3_SPREAD + j[1], _yaw(rng, 0.2))
    b = (bx + j[2], by + L3_SPREAD + j[3], _yaw(rng, 0.2))
    t = rng.uniform(0.45, 0.55)
    ox = a[0] + t * (b[0] - a[0]) + rng.uniform(-0.02, 0.02)
    oy = a[1] + t * (b[1] - a[1])
    obstacle = (ox, oy, rng.uniform(0.02, 0.05), rng.uniform(0.008, 0.014),
                rng.uniform(*OBSTACLE_HALF_HEIGHT))
    return StackLayout(a, b, tuple(float(v) for v in obstacle))


def base_scene_layout(rng: np.random.Generator) -> StackLayout:
    """A base scene for one recording: a level 0-2 layout (the expert records without obstacles)."""
    return sample_layout(int(rng.integers(0, 3)), rng)


@dataclass(frozen=True)
class QueryState:
    """One physical state of a query set."""

    state_id: str
    layout_level: int
    layout: StackLayout


def query_states(query_set: str) -> tuple[QueryState, ...]:
    """The 40 states (10 per level, level-major) of a Stack query set."""
    if query_set not in QUERY_SET_SEEDS:
        raise UnknownQuerySet(f"unknown Stack query set {query_set!r}; known: {', '.join(QUERY_SET_SEEDS)}")
    rng = np.random.default_rng(QUERY_SET_SEEDS[query_set])
    states = []
    for level in LEVELS:
        for j in range(N_STATES_PER_LEVEL):
            sid = f"{query_set}-s{level * N_STATES_PER_LEVEL + j:02d}"
            states.append(QueryState(sid, level, sample_layout(level, rng)))
    return tuple(states)
