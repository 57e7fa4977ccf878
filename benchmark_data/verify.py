"""Re-execute stored cells from scratch and under other renders; every difference is reported.

Replay is camera-blind, so its outcome must not depend on the appearance draw:
each sampled cell is re-run in a fresh simulator with a random perturbed
appearance (draw 1-4) applied to the model, and its success, initial state
hash and final state hash must equal the stored ones; the initial hash must
also equal the query set's published state hash.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmark_data.cells import KEY_COLUMNS, load_cells
from benchmark_data.paths import BASE_QUERY_SET
from benchmark_data.query_sets import read_scenes


@dataclass(frozen=True)
class Mismatch:
    """One field of one cell that re-execution did not reproduce."""

    key: tuple
    draw: int
    field: str
    stored: object
    rerun: object


@dataclass(frozen=True)
class VerifyReport:
    n_checked: int
    mismatches: tuple[Mismatch, ...]

    @property
    def ok(self) -> bool:
        return not self.mismatches


def stored_replay_cells(root=None) -> pd.DataFrame:
    """Every stored Replay cell of the Stack query sets (including own-base cells)."""
    frames = [load_cells("replay", q, root) for q in ("stack-orig", "stack-fresh", BASE_QUERY_SET["stack"])]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=KEY_COLUMNS)


_STATE: dict = {}


def _init(world) -> None:
    from runner.appearance import Appearance
    from runner.stack_sim import StackSim

    sim = StackSim()
    _STATE.update(sim=sim, world=world, appearance=Appearance(sim.model))


def _rerun(job: tuple) -> tuple:
    from runner.appearance import sample_draw
    from runner.executor import Cell, run_cell

    key, draw = job
    cell = Cell(*key)
    look = sample_draw(cell.state_id, draw)
    result = run_cell(_STATE["sim"], _STATE["world"], cell,
                      appearance=lambda sim: _STATE["appearance"].apply(look))
    return key, draw, result.success, result.state_hash, result.final_hash


def verify_sample(n: int, *, seed: int = 0, workers: int = 1, root=None) -> VerifyReport:
    """Re-execute `n` random stored cells (seeded choice, random draw 1-4 each)."""
    from benchmark_data.generate import build_world
    from runner.executor import Cell

    cells = stored_replay_cells(root)
    if not len(cells):
        raise ValueError("no stored Replay cells to verify (run `expaudit data generate` first)")
    rng = np.random.default_rng(seed)
    pick = cells.iloc[rng.choice(len(cells), size=min(n, len(cells)), replace=False)]
    draws = rng.integers(1, 5, size=len(pick))
    jobs = [(tuple(int(v) if k == "seed" else v for k, v in zip(KEY_COLUMNS, row)), int(d))
            for row, d in zip(pick[list(KEY_COLUMNS)].itertuples(index=False), draws)]
    world = build_world([Cell(*key) for key, _ in jobs], root)
    if workers <= 1:
        _init(world)
        results = list(map(_rerun, jobs))
    else:
        with mp.get_context("spawn").Pool(workers, initializer=_init, initargs=(world,)) as pool:
            results = pool.map(_rerun, jobs, chunksize=1)
    return VerifyReport(len(jobs), tuple(_compare(pick, results, root)))


def _published_hashes(query_sets, root) -> dict:
    hashes = {}
    for q in query_sets:
        if q != BASE_QUERY_SET["stack"]:
            scenes = read_scenes(q, root)
            hashes.update(zip(scenes["state_id"], scenes["state_hash"]))
    return hashes


def _compare(pick: pd.DataFrame, results, root):
    stored = {tuple(int(v) if k == "seed" else v for k, v in zip(KEY_COLUMNS, row[:5])): row[5:]
              for row in pick[list(KEY_COLUMNS) + ["success", "state_hash", "final_hash"]]
              .itertuples(index=False)}
    published = _published_hashes(set(pick["query_set"]), root)
    for key, draw, success, state_hash, final_hash in results:
        want_success, want_state, want_final = stored[key]
        for name, want, got in (("success", int(want_success), success),
                                ("state_hash", want_state, state_hash),
                                ("final_hash", want_final, final_hash)):
            if want != got:
                yield Mismatch(key, draw, name, want, got)
        scene_hash = published.get(key[3])
        if scene_hash is not None and scene_hash != state_hash:
            yield Mismatch(key, draw, "published state_hash", scene_hash, state_hash)
