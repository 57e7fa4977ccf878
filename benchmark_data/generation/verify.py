"""Re-execute stored cells from scratch and under other renders; every difference is reported.

Replay is camera-blind, so its outcome must not depend on the appearance draw:
each sampled cell is re-run in a fresh simulator with a random perturbed
appearance (draw 1-4) applied to the model, and its success, initial state
hash and final state hash must equal the stored ones; the initial hash must
also equal the query set's published state hash.

Policy cells (`verify_policy_sample`) are stored per scene and read the
camera, so each sampled cell is re-run as stored: its own scene and draw,
from scratch in a fresh `PolicyExecutor` (CPU, one environment, one intra-op
thread, as the CPU runner executes them). Its success, initial and final
state hashes must equal the stored ones, and the stored initial hash the
published hash of the scene's state. A cell stored under another code
version than the current code and frozen weights give is reported as a
`code_version` difference and not re-run: its outcome belongs to other
weights or code, so re-running it would compare nothing. The report counts
the re-run cells that record another CPU than this one (or none): there a
closed-loop rollout can end in another final state (docs/data.md, "What
reproduces where"), so their final-hash differences say little.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmark_data.cells import KEY_COLUMNS, load_cells
from benchmark_data.generation.rollouts import build_policy_world, build_world
from benchmark_data.paths import BASE_QUERY_SET, root_or_default
from benchmark_data.policy_files import POLICY_MECHANISMS, is_trained, policy_dir
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import QUERY_SETS
from expaudit.errors import DataNotFound
from expaudit.numerics import cpu_model
from simulator.appearance import Appearance, sample_draw
from simulator.executor import Cell, run_cell
from simulator.policy_executor import PolicyExecutor
from simulator.provenance import policy_code_version, policy_code_versions
from simulator.stack_sim import StackSim


class NothingToVerify(DataNotFound, ValueError):
    """The root holds no stored cells of the kind asked for."""


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
    """What a verification checked and every difference it found.

    Attributes:
        made_elsewhere: re-run policy cells whose packages record another CPU
            than this machine's, or none.
    """

    n_checked: int
    mismatches: tuple[Mismatch, ...]
    made_elsewhere: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def cells_differing(self, field: str | None = None) -> int:
        """Cells with at least one difference (in `field` only, when given)."""
        return len({m.key for m in self.mismatches if field is None or m.field == field})


def stored_replay_cells(root=None) -> pd.DataFrame:
    """Every stored Replay cell of the Stack query sets (including own-base cells)."""
    frames = [load_cells("replay", q, root) for q in ("stack-orig", "stack-fresh", BASE_QUERY_SET["stack"])]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=KEY_COLUMNS)


_STATE: dict = {}


def _init(world) -> None:
    sim = StackSim()
    _STATE.update(sim=sim, world=world, appearance=Appearance(sim.model))


def _rerun(job: tuple) -> tuple:
    key, draw = job
    cell = Cell(*key)
    look = sample_draw(cell.state_id, draw)
    result = run_cell(_STATE["sim"], _STATE["world"], cell,
                      appearance=lambda sim: _STATE["appearance"].apply(look))
    return key, draw, result.success, result.state_hash, result.final_hash


def verify_sample(n: int, *, seed: int = 0, workers: int = 1, root=None) -> VerifyReport:
    """Re-execute `n` random stored cells (seeded choice, random draw 1-4 each)."""
    cells = stored_replay_cells(root)
    if not len(cells):
        raise NothingToVerify("no stored Replay cells to verify (run `expaudit data generate` first)")
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


# ------------------------------------------------------------------ policy cells

def stored_policy_tables(root=None) -> list[tuple[str, str]]:
    """(mechanism, query set) of every policy cells table or journal present, sorted."""
    mechanisms = {m.value for m in POLICY_MECHANISMS}
    directory = root_or_default(root) / "cells"
    found = set()
    for suffix in (".parquet", ".journal.jsonl"):
        for path in directory.glob(f"*__*{suffix}"):
            mechanism, _, query_set = path.name[:-len(suffix)].partition("__")
            if mechanism in mechanisms:
                found.add((mechanism, query_set))
    return sorted(found)


def stored_policy_cells(root=None) -> pd.DataFrame:
    """Every stored Policy and Policy+DR cell (tables plus journals), table by table."""
    frames = [load_cells(m, q, root) for m, q in stored_policy_tables(root)]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=KEY_COLUMNS)


def _current_policy_versions(mechanism: str, experience_id: str, root) -> frozenset[str]:
    """The stored code versions that name this policy's current weights and mechanism
    (`policy_code_versions`); empty when the policy is not frozen here."""
    if not is_trained(mechanism, experience_id, root):
        return frozenset()
    return policy_code_versions(str(policy_dir(mechanism, experience_id, root)))


def _rerun_policy_cell(cell, world) -> tuple:
    """Run one cell in a fresh executor (CPU, one environment, one intra-op thread)."""
    import torch  # deferred: heavy optional dependency

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    executor = PolicyExecutor(world, device="cpu", envs=1)
    try:
        (result,) = executor.run([cell])
    finally:
        executor.close()
        torch.set_num_threads(threads)
    return result.success, result.state_hash, result.final_hash


def verify_policy_sample(n: int, *, seed: int = 0, root=None, out=None) -> VerifyReport:
    """Re-execute `n` random stored policy cells (seeded choice) from scratch; report every difference.

    Scenes come from `root`; cells and the policies that ran them from `out` (default `root`,
    e.g. the staging root of regenerated policies)."""
    store = root if out is None else out
    cells = stored_policy_cells(store)
    if not len(cells):
        raise NothingToVerify("no stored policy cells to verify "
                              "(run `expaudit data generate --policies TASK` first)")
    rng = np.random.default_rng(seed)
    pick = cells.iloc[np.sort(rng.choice(len(cells), size=min(n, len(cells)), replace=False))]
    scenes = {q: read_scenes(q, root).set_index("scene_id") for q in set(pick["query_set"])}
    versions: dict[tuple[str, str], frozenset[str]] = {}
    mismatches, rerun = [], []
    here = cpu_model()
    made_elsewhere = 0
    for row in pick.itertuples(index=False):
        cell = Cell(row.mechanism, row.query_set, row.experience_id, row.state_id, int(row.seed))
        if row.state_id not in scenes[row.query_set].index:
            mismatches.append(Mismatch(cell.key, -1, "state_id", row.state_id, None))
            continue
        scene = scenes[row.query_set].loc[row.state_id]
        draw = int(scene["appearance_draw"])
        if scene["state_hash"] != row.state_hash:
            mismatches.append(Mismatch(cell.key, draw, "published state_hash", scene["state_hash"],
                                       row.state_hash))
        policy = (row.mechanism, row.experience_id)
        if policy not in versions:
            versions[policy] = _current_policy_versions(*policy, store)
        if row.code_version not in versions[policy]:
            now = (policy_code_version(str(policy_dir(*policy, store))) if versions[policy]
                   else None)
            mismatches.append(Mismatch(cell.key, draw, "code_version", row.code_version, now))
        else:
            rerun.append((cell, draw, (int(row.success), row.state_hash, row.final_hash)))
            made_elsewhere += json.loads(row.packages or "{}").get("cpu") != here
    for task in sorted({QUERY_SETS[cell.query_set] for cell, _, _ in rerun}):
        group = [job for job in rerun if QUERY_SETS[job[0].query_set] == task]
        world = build_policy_world([cell for cell, _, _ in group], root, store)
        for cell, draw, stored in group:
            got = _rerun_policy_cell(cell, world)
            for name, want, value in zip(("success", "state_hash", "final_hash"), stored, got):
                if want != value:
                    mismatches.append(Mismatch(cell.key, draw, name, want, value))
    return VerifyReport(len(pick), tuple(mismatches), made_elsewhere)
