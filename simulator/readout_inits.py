"""Initializations of the readout audit: seeded simulator starts per (task, split, index).

An initialization is the statistical unit of the readout audit (docs/readout_protocol.md):
one start of a task's simulator, drawn with the task's own layout sampler and its own
expert style from a seed namespace used nowhere else (`READOUT_SEED`), so no
initialization equals a query state, a validation state or a recording's base scene.
Splits are disjoint by construction (the split is part of the seed) and checked by test:
`train` fits readouts, `dev` makes choices and fits failure predictors, `confirm` gives
the reported numbers (its labels are sealed), `eval` is the policy-failure evaluation set.

Which layouts: Door draws layout levels 0-1 (nominal, displaced). Level 2 (door ajar)
is left out: its states start with the latch inside the frame (issue 38), and an ajar
start adds nothing a controlled grid does not already vary. Stack draws levels 0-2, the
scenes the expert records in (`stack_scenes.base_scene_layout`). No obstacles, nominal
appearance (draw 0). `simulator.readout_checks.check_start` verifies every start
physically (no interpenetration deeper than 1 mm, still under a neutral action).

`initialization(task, split, index)` is a pure function; `initializations(task, split,
bank)` lists a whole split of a bank version; `start(sim, init)` puts a task's simulator into it.

Bank versions (docs/readout_protocol.md, amendments 2 and 3): version 2 keeps version 1's
`train` and `dev` and draws new sealed splits from the same rule at the next indices
(`confirm` 24-47, `eval` 64-127), so its ids (`door-confirm-i024`) and starts differ from
every version 1 initialization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from simulator.door_expert import DoorStyle, sample_door_style
from simulator.door_scenes import DoorLayout, sample_door_layout
from simulator.door_sim import DoorSim
from simulator.errors import BadReadoutInput, UnknownTask
from simulator.stack_expert import StackStyle, sample_style
from simulator.stack_scenes import StackLayout, sample_layout
from simulator.stack_sim import StackSim

READOUT_SEED = 9_009
"""Seed namespace of the readout initializations (no other generator of the project uses it)."""
TASKS = ("door", "stack")
SPLITS = {"train": 48, "dev": 16, "confirm": 24, "eval": 64}
"""Initializations per split and task (READOUT_SPEC: at least 48 / 16 / 24, and 64 for the
policy-failure evaluation)."""
FIRST_INDEX = {"v1": {"train": 0, "dev": 0, "confirm": 0, "eval": 0},
               "v2": {"train": 0, "dev": 0, "confirm": 24, "eval": 64}}
"""First index of each split per bank version; a split holds `SPLITS[split]` indices from there."""
BANKS = tuple(FIRST_INDEX)
_TASK_CODE = {"door": 1, "stack": 2}
_SPLIT_CODE = {"train": 1, "dev": 2, "confirm": 3, "eval": 4}
LEVELS = {"door": (0, 1), "stack": (0, 1, 2)}
"""Layout levels an initialization is drawn from, per task (module docstring says why)."""

Layout = Union[DoorLayout, StackLayout]
Style = Union[DoorStyle, StackStyle]


@dataclass(frozen=True)
class Initialization:
    """One readout initialization: where the simulator starts and how the expert moves from it."""

    task: str
    split: str
    index: int
    layout_level: int
    layout: Layout
    style: Style

    @property
    def init_id(self) -> str:
        """Public id, e.g. `door-train-i007` (it names no coordinate)."""
        return f"{self.task}-{self.split}-i{self.index:03d}"

    def to_dict(self) -> dict:
        return {"init_id": self.init_id, "task": self.task, "split": self.split, "index": self.index,
                "layout_level": self.layout_level, "layout": self.layout.to_dict(),
                "style": self.style.to_dict()}


def _check(task: str, split: str, index: int) -> None:
    if task not in TASKS:
        raise UnknownTask(f"task must be one of {TASKS}, got {task!r}")
    if split not in SPLITS:
        raise BadReadoutInput(f"split must be one of {tuple(SPLITS)}, got {split!r}")
    top = max(first[split] for first in FIRST_INDEX.values()) + SPLITS[split]
    if not isinstance(index, (int, np.integer)) or not 0 <= index < top:
        raise BadReadoutInput(f"index must be an integer in [0, {top}) for split {split!r}, "
                         f"got {index!r}")


def rng_for(task: str, split: str, index: int, purpose: int = 0) -> np.random.Generator:
    """The generator of one initialization (`purpose` 0: layout and style; others: later draws)."""
    _check(task, split, index)
    return np.random.default_rng(np.random.SeedSequence(
        [READOUT_SEED, _TASK_CODE[task], _SPLIT_CODE[split], int(index), int(purpose)]))


def initialization(task: str, split: str, index: int) -> Initialization:
    """Initialization `index` of `split` for `task` (a pure function of its arguments)."""
    rng = rng_for(task, split, index)
    levels = LEVELS[task]
    level = int(levels[int(rng.integers(0, len(levels)))])
    if task == "door":
        layout, style = sample_door_layout(level, rng), sample_door_style(rng)
    else:
        layout, style = sample_layout(level, rng), sample_style(rng)
    return Initialization(task, split, int(index), level, layout, style)


def split_indices(split: str, bank: str = "v1") -> range:
    """The indices of `split` in bank version `bank` (`FIRST_INDEX`)."""
    if bank not in FIRST_INDEX:
        raise BadReadoutInput(f"bank must be one of {BANKS}, got {bank!r}")
    _check(TASKS[0], split, 0)
    first = FIRST_INDEX[bank][split]
    return range(first, first + SPLITS[split])


def initializations(task: str, split: str, bank: str = "v1") -> tuple[Initialization, ...]:
    """Every initialization of one split of bank version `bank`, in index order."""
    _check(task, split, 0)
    return tuple(initialization(task, split, i) for i in split_indices(split, bank))


def make_sim(task: str):
    """A fresh simulator of `task` (DoorSim or StackSim); heavy, one per process."""
    if task == "door":
        return DoorSim()
    if task == "stack":
        return StackSim()
    raise UnknownTask(f"task must be one of {TASKS}, got {task!r}")


def start(sim, init: Initialization) -> None:
    """Put `sim` (the task's simulator) into the initialization: its layout, the robot at home."""
    sim.restore(init.layout)
