"""The readout banks' fixed choices: grid rule, contexts, admission thresholds, mechanism version.

Every number here is written in docs/readout_protocol.md, chosen from `train` and `dev`
pilots before any `confirm` cell was rendered; changing one is a protocol amendment and
a bump of `READOUT_BANK_MECHANISM`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.errors import BadReadoutInput

READOUT_BANK_MECHANISM = 1
"""Version of what a bank's observations are (initializations, expert, settling, checks,
cameras), declared like `simulator.provenance.REPLAY_MECHANISM`: bumped by any change of
behaviour, after which the banks are regenerated. The golden cells
(tests/simulator/test_readout_golden.py) re-render stored cells and fail when behaviour
changed without a bump."""
GRID_SIZE = 6
N_CONTEXTS = 4
GRID_PERCENTILES = (10.0, 90.0)
"""The grid spans these percentiles of the coordinate over every control step of the expert's
trajectories from the `train` initializations (the central 80% of the natural range)."""
COORDINATE_RANGE = {"door": (0.0, 22.9), "stack": (-float("inf"), float("inf"))}
"""Physical range of the coordinate (Door: the hinge joint's 0-0.4 rad); the grid is clipped to it."""
MIN_ENDPOINT_SEPARATION = {"door": 5.0, "stack": 50.0}
"""Smallest actual distance between a grid's two endpoints (deg, mm) for an estimable gain."""
CONTEXT_CANDIDATES = 13
"""Candidate contexts per initialization: the arm and fingers at 13 evenly spaced steps of the
initialization's own expert trajectory (first and last included)."""
NATURAL_EVERY = {"door": 10, "stack": 10}
"""Every how-many control steps a natural frame is rendered and stored (plus the final state)."""


@dataclass(frozen=True)
class Thresholds:
    """Admission thresholds of a controlled cell (all must hold)."""

    max_drift: float  # |coordinate after settling - set value|, task units
    max_object_speed: float  # task units per s, over the last steps of settling
    max_joint_speed: float  # rad/s, same window
    max_penetration_mm: float  # deepest interpenetration between any two bodies while settling
    min_visible_px: int  # agent-view pixels of the target after settling

    def to_dict(self) -> dict:
        return {"max_drift": self.max_drift, "max_object_speed": self.max_object_speed,
                "max_joint_speed": self.max_joint_speed, "max_penetration_mm": self.max_penetration_mm,
                "min_visible_px": self.min_visible_px, "robot_target_contact": "none while settling"}


THRESHOLDS = {
    "door": Thresholds(max_drift=0.5, max_object_speed=1.0, max_joint_speed=0.05,
                       max_penetration_mm=1.0, min_visible_px=20),
    "stack": Thresholds(max_drift=2.0, max_object_speed=5.0, max_joint_speed=0.05,
                        max_penetration_mm=1.0, min_visible_px=6),
}
"""Per task (docs/readout_protocol.md gives the pilot numbers they were chosen from)."""


def grid_values(task: str, natural_coordinates: np.ndarray) -> np.ndarray:
    """The `GRID_SIZE` set values of a task's grid from its `train` natural coordinates."""
    coords = np.asarray(natural_coordinates, dtype=np.float64)
    if coords.ndim != 1 or coords.size < 2 or not np.isfinite(coords).all():
        raise BadReadoutInput(f"natural_coordinates must be a finite 1-d array of at least 2 values, "
                         f"got shape {coords.shape}")
    lo, hi = np.percentile(coords, GRID_PERCENTILES)
    low, high = COORDINATE_RANGE[task]
    lo, hi = max(lo, low), min(hi, high)
    return np.round(np.linspace(lo, hi, GRID_SIZE), 3)


def reject_reason(task: str, *, drift: float, max_object_speed: float, max_joint_speed: float,
                  contact: bool, penetration_mm: float, visible_px: int) -> str:
    """'' when a cell passes every admission check, else the failed checks joined by '; '."""
    t = THRESHOLDS[task]
    reasons = []
    if contact:
        reasons.append("robot-target contact")
    if penetration_mm > t.max_penetration_mm:
        reasons.append(f"penetration {penetration_mm:.2f} mm > {t.max_penetration_mm}")
    if drift > t.max_drift:
        reasons.append(f"drift {drift:.3f} > {t.max_drift}")
    if max_object_speed > t.max_object_speed:
        reasons.append(f"object speed {max_object_speed:.3f} > {t.max_object_speed}")
    if max_joint_speed > t.max_joint_speed:
        reasons.append(f"joint speed {max_joint_speed:.4f} > {t.max_joint_speed}")
    if visible_px < t.min_visible_px:
        reasons.append(f"target visible in {visible_px} px < {t.min_visible_px}")
    return "; ".join(reasons)


def candidate_steps(n_steps: int) -> list[int]:
    """The trajectory steps (0..n_steps) of the `CONTEXT_CANDIDATES` context candidates."""
    return sorted({int(round(k * n_steps / (CONTEXT_CANDIDATES - 1))) for k in range(CONTEXT_CANDIDATES)})


def choose_contexts(candidates: list[int], passed: list[bool]) -> list[tuple[int, bool]]:
    """Pick `N_CONTEXTS` of the candidates: those that passed screening first, spread evenly over
    the trajectory (the passing candidates nearest to quantiles 0, 1/3, 2/3, 1 of their list),
    then, when fewer passed, the failing ones in trajectory order. Returns (step, screened)."""
    good = [c for c, p in zip(candidates, passed) if p]
    chosen: list[int] = []
    if good:
        for q in np.linspace(0, len(good) - 1, min(N_CONTEXTS, len(good))):
            pick = good[int(round(q))]
            if pick not in chosen:
                chosen.append(pick)
    picked = [(c, True) for c in chosen]
    for c, p in zip(candidates, passed):
        if len(picked) >= N_CONTEXTS:
            break
        if not p:
            picked.append((c, False))
    return picked


RENDER_TOLERANCE = 2
"""Largest per-pixel difference (of 255) between two renders of one simulator state on
different CPUs: the software rasterizer rounds differently with the CPU's vector width
(measured: at most 2, in up to 5% of a 64 x 64 view, Intel Xeon with AVX-512 against the
machine that made the banks). Another state moves whole objects and differs far more."""


def renders_agree(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two renders show one state: same shape, every pixel within `RENDER_TOLERANCE`."""
    if first.shape != second.shape:
        return False
    return int(np.abs(first.astype(np.int16) - second.astype(np.int16)).max(initial=0)) <= RENDER_TOLERANCE
