"""The rollout executor: cells in, outcomes with provenance out; multiprocess and resumable.

A cell is (mechanism, query set, experience, state, seed). Replay is
camera-blind, so a cell names a physical state, not a render; its outcome
labels all appearance draws of that state. Finished cells are appended to a
journal (one JSON line each, flushed) by the parent process as soon as a
worker returns them, so a killed run loses only the cells in flight; a rerun
skips every cell already in the journal or the consolidated table.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from expaudit.errors import InternalError
from expaudit.journal import append_record, journal_keys
from simulator.provenance import code_version, package_versions
from simulator.replay import replay_episode
from simulator.stack_scenes import StackLayout
from simulator.stack_sim import StackSim


@dataclass(frozen=True)
class Cell:
    """One (mechanism, query set, experience, physical state, seed) to execute."""

    mechanism: str
    query_set: str
    experience_id: str
    state_id: str
    seed: int

    @property
    def key(self) -> tuple:
        return (self.mechanism, self.query_set, self.experience_id, self.state_id, self.seed)


@dataclass(frozen=True)
class CellResult:
    """The outcome of one cell and how it was produced.

    `state_hash` is the simulator state before the episode (identical for all
    renders of the state), `final_hash` the state after it (re-execution must
    reproduce it bit for bit).
    """

    cell: Cell
    success: int
    state_hash: str
    final_hash: str
    wall_s: float
    code_version: str
    packages: str

    def to_record(self) -> dict:
        record = asdict(self.cell)
        record.update(success=self.success, state_hash=self.state_hash,
                      final_hash=self.final_hash, wall_s=round(self.wall_s, 4),
                      code_version=self.code_version, packages=self.packages)
        return record


@dataclass(frozen=True)
class ReplayWorld:
    """What a worker needs to run Replay cells: recorded paths and query layouts."""

    experiences: dict[str, tuple[StackLayout, np.ndarray]]  # id -> (base layout, path)
    states: dict[str, StackLayout]  # state id -> layout


class UnsupportedMechanismError(InternalError, ValueError):
    """A cell names a mechanism this executor cannot run (callers pick the executor by the
    cells' mechanism: a bug)."""


class NotInWorld(InternalError, KeyError):
    """A cell whose experience, policy, state or scene the worker's world does not hold (the
    world is built from the same cells: a bug)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


_WORKER: dict = {}


def _init_worker(world: ReplayWorld) -> None:
    """Worker start: one simulator per process (the Pool's initializer)."""
    _WORKER["sim"] = StackSim()
    _WORKER["world"] = world


def run_cell(sim, world: ReplayWorld, cell: Cell, appearance: Callable | None = None) -> CellResult:
    """Execute one cell on `sim`; `appearance(sim)` (if given) restyles the render first."""
    if cell.mechanism != "replay":
        raise UnsupportedMechanismError(
            f"cell mechanism {cell.mechanism!r}: this executor runs only 'replay' cells")
    try:
        base, path = world.experiences[cell.experience_id]
    except KeyError:
        raise NotInWorld(f"experience_id {cell.experience_id!r} is not in the library") from None
    try:
        query = world.states[cell.state_id]
    except KeyError:
        raise NotInWorld(f"state_id {cell.state_id!r} is not in query set {cell.query_set!r}") from None
    start = time.perf_counter()
    if appearance is not None:
        appearance(sim)
    sim.restore(query)
    state_hash = sim.state_hash()
    success = replay_episode(sim, path, base, query, seed=cell.seed,
                             experience_id=cell.experience_id, state_id=cell.state_id)
    return CellResult(cell=cell, success=int(success), state_hash=state_hash,
                      final_hash=sim.state_hash(), wall_s=time.perf_counter() - start,
                      code_version=code_version(), packages=package_versions())


def _worker_run(cell: Cell) -> CellResult:
    return run_cell(_WORKER["sim"], _WORKER["world"], cell)


def execute(cells: Iterable[Cell], world: ReplayWorld, journal_for: Callable[[Cell], Path], *,
            workers: int = 2, done_keys: set | None = None) -> Iterator[CellResult]:
    """Run the cells not yet done, appending each result to its journal; yields results as they land.

    `journal_for(cell)` names the journal file of a cell (one per mechanism and
    query set); `done_keys` holds keys already stored elsewhere (the consolidated
    tables). Keys already in a journal are skipped too.
    """
    cells = list(cells)
    skip = set(done_keys or ())
    for path in {journal_for(c) for c in cells}:
        skip.update(journal_keys(path))
    todo = [c for c in cells if c.key not in skip]
    if not todo:
        return
    if workers <= 1:
        _init_worker(world)
        yield from journaled(map(_worker_run, todo), journal_for)
        return
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(world,)) as pool:
        yield from journaled(pool.imap_unordered(_worker_run, todo, chunksize=1), journal_for)


def journaled(results: Iterable[CellResult], journal_for: Callable[[Cell], Path]) -> Iterator[CellResult]:
    """Append each result to its journal (`expaudit.journal.append_record`), then yield it."""
    for result in results:
        append_record(journal_for(result.cell), result.to_record())
        yield result
