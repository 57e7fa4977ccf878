"""The readout audit's behavioural link: every published image policy run from each dev and eval
initialization, under each execution-noise seed, stored like the matrix cells.

An outcome is a policy cell (`simulator.executor.Cell`) whose state is a readout
initialization: mechanism and experience name the policy, `query_set` is
`readout-<task>-<split>`, `state_id` the initialization id, `seed` the
execution-noise seed (`simulator.policy_rollout.noise_for`). The matrix's
policy executor runs it (`simulator.policy_executor`), so the code version
(`policy/<mechanism>+weights:<hash>`), the state hashes before and after and
the packages record are the matrix cells'. Results are appended to the task's
journal (`readout/<task>-v1/outcomes.journal.jsonl`) as they land; a rerun skips
every cell already there, and `consolidate` folds the journal into
`outcomes.parquet`, one row per (policy, initialization, seed) with the
physical variables of the initialization that READOUT_SPEC's `M0` reads:
`initial_coordinate` (task units) and `target_gripper_distance_mm`.

Order (`ordered_cells`): seed 0 before seed 1; within a seed, the dev and eval
initializations interleaved in proportion and each initialization run by every
policy before the next, so any prefix of a run holds whole, comparable blocks.

    python -m benchmark_data.generation.readout_outcomes --task door --task stack
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from benchmark_data.readout_banks import BANK_VERSION, BANKS, TASKS, bank_dir
from benchmark_data.policy_files import policy_dirs, policy_experiences
from expaudit.errors import DataNotFound, InvalidInput
from expaudit.journal import CELL_COLUMNS, append_record, read_journal
from simulator.executor import Cell
from simulator.policy_executor import PolicyScene, PolicyWorld, execute_policy
from simulator.readout_checks import Target
from simulator.readout_inits import initializations, make_sim

SEEDS = (0, 1)
"""Execution-noise seeds per (policy, initialization) (READOUT_SPEC: 2)."""
SPLITS = ("dev", "eval")
"""The initializations the policies run from: `dev` fits the failure predictors, `eval` scores them."""
JOURNAL = "outcomes.journal.jsonl"
TABLE = "outcomes.parquet"
COORDINATE_UNIT = {"door": "deg", "stack": "mm"}
"""Units of `initial_coordinate` (READOUT_SPEC: the hinge angle in degrees, cube A's world x in mm)."""
OUTCOME_COLUMNS = ("policy", "mechanism", "experience_id", "initialization", "split", "seed", "success",
                   "code_version", "state_hash", "final_hash", "wall_s", "packages",
                   "initial_coordinate", "target_gripper_distance_mm")


class OutcomesNotReady(DataNotFound, FileNotFoundError):
    """Outcomes cannot be run or read yet (no initializations, no policies, no journal)."""


@dataclass(frozen=True)
class ReadoutStart:
    """One initialization the policies run from: its id, split and simulator layout, rendered
    under appearance draw `draw` (the bank's initializations use the nominal draw 0)."""

    initialization: str
    split: str
    layout: object  # simulator.door_scenes.DoorLayout or simulator.stack_scenes.StackLayout
    draw: int = 0


@dataclass(frozen=True)
class StartPhysics:
    """The physical variables of an initialization that READOUT_SPEC's M0 reads."""

    initial_coordinate: float
    target_gripper_distance_mm: float


def query_set_of(task: str, split: str) -> str:
    """The `query_set` field of a readout outcome cell: `readout-<task>-<split>`."""
    return f"readout-{task}-{split}"


def policy_id(mechanism: str, experience_id: str) -> str:
    """A published policy's id, as under `policies/`: `<mechanism>/<experience id>`."""
    return f"{mechanism}/{experience_id}"


def journal_path(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    return bank_dir(task, root, bank) / JOURNAL


def table_path(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    return bank_dir(task, root, bank) / TABLE


def task_policies(task: str, root: str | Path | None = None) -> list[tuple[str, str]]:
    """(mechanism, experience id) of every published image policy of `task`, registry order."""
    return [(m, e) for t, m, e in policy_experiences() if t == task]


def _interleaved(starts: Sequence[ReadoutStart]) -> list[ReadoutStart]:
    """Starts of several splits merged so each split keeps its share of every prefix."""
    by_split: dict[str, list[ReadoutStart]] = {}
    for start in starts:
        by_split.setdefault(start.split, []).append(start)
    keyed = [((i + 0.5) / len(group), split, i, s) for split, group in by_split.items()
             for i, s in enumerate(group)]
    return [s for *_, s in sorted(keyed, key=lambda k: k[:3])]


def ordered_cells(task: str, starts: Sequence[ReadoutStart], policies: Sequence[tuple[str, str]],
                  seeds: Sequence[int] = SEEDS) -> list[Cell]:
    """Every (seed, initialization, policy) cell, in the order a run executes them (module doc)."""
    unknown = sorted({s.split for s in starts} - set(SPLITS))
    if unknown:
        raise InvalidInput(f"split must be one of {SPLITS}, got {unknown}")
    order = _interleaved(starts)
    return [Cell(mechanism, query_set_of(task, start.split), eid, start.initialization, int(seed))
            for seed in seeds for start in order for mechanism, eid in policies]


def start_physics(task: str, starts: Iterable[ReadoutStart], sim=None) -> dict[str, StartPhysics]:
    """Initial coordinate and the target's distance to the gripper (mm), per initialization.

    The coordinate is the bank's (`simulator.readout_checks.Target`: Door's hinge angle in
    degrees, Stack's cube A world x in mm); the distance runs from the gripper's site to the
    Door handle's site or to cube A's centre. Read after restoring the layout, before any step.
    """
    sim = sim if sim is not None else make_sim(task)
    target = Target(sim, task)
    out = {}
    for start in starts:
        sim.restore(start.layout)
        point = sim.data.site_xpos[sim.handle_site] if task == "door" else sim.cube_pos()[0]
        out[start.initialization] = StartPhysics(
            target.coordinate(), float(np.linalg.norm(point - sim.ee_pos()) * 1000.0))
    return out


def run_outcomes(task: str, starts: Sequence[ReadoutStart], *, root: str | Path | None = None,
                 policies_root: str | Path | None = None, seeds: Sequence[int] = SEEDS,
                 policies: Sequence[tuple[str, str]] | None = None, limit: int | None = None,
                 bank: str = BANK_VERSION, log: Callable[[str], None] = lambda line: None) -> int:
    """Run the outcome cells of `task` not yet in its journal (at most `limit` new ones, in
    `ordered_cells` order); returns how many ran. One process (the machine is shared)."""
    policies = list(policies if policies is not None else task_policies(task))
    dirs = policy_dirs(task, policies_root)
    missing = [policy_id(m, e) for m, e in policies if (m, e) not in dirs]
    if missing:
        raise OutcomesNotReady(f"{task}: policies not in the frozen data: {', '.join(missing)}")
    scenes = {s.initialization: PolicyScene(s.initialization, s.initialization, s.draw, s.layout)
              for s in starts}
    world = PolicyWorld(task, scenes, {k: v for k, v in dirs.items() if k in set(policies)})
    journal = journal_path(task, root, bank)
    cells = ordered_cells(task, starts, policies, seeds)
    if limit is not None:
        done = _journal_keys(journal)
        cells = [c for c in cells if c.key not in done][:limit]
    count = 0
    for result in execute_policy(cells, world, lambda cell: journal, workers=1):
        count += 1
        log(f"{task} {result.cell.state_id} {policy_id(result.cell.mechanism, result.cell.experience_id)} "
            f"seed {result.cell.seed}: success {result.success} ({result.wall_s:.1f} s)")
    return count


def _journal_keys(journal: Path) -> set[tuple]:
    return {tuple(r[k] for k in ("mechanism", "query_set", "experience_id", "state_id", "seed"))
            for r in read_journal(journal)}


def consolidate(task: str, starts: Sequence[ReadoutStart], root: str | Path | None = None,
                physics: dict[str, StartPhysics] | None = None, bank: str = BANK_VERSION) -> pd.DataFrame:
    """Fold the task's journal into `outcomes.parquet` (sorted by policy, initialization, seed);
    returns the table. A key journaled twice keeps its first record."""
    journal = journal_path(task, root, bank)
    records = read_journal(journal)
    if not records:
        raise OutcomesNotReady(f"{journal}: no outcomes journaled yet")
    physics = physics if physics is not None else start_physics(task, starts)
    split_of = {s.initialization: s.split for s in starts}
    frame = pd.DataFrame(records, columns=list(CELL_COLUMNS))
    frame = frame.drop_duplicates(subset=["mechanism", "query_set", "experience_id", "state_id", "seed"])
    unknown = sorted(set(frame.state_id) - set(physics))
    if unknown:
        raise InvalidInput(f"{journal}: initializations not among the given starts: {unknown[:5]}")
    frame["policy"] = [policy_id(m, e) for m, e in zip(frame.mechanism, frame.experience_id)]
    frame["initialization"] = frame.state_id
    frame["split"] = [split_of[i] for i in frame.initialization]
    frame["success"] = frame.success.astype(bool)
    frame["initial_coordinate"] = [physics[i].initial_coordinate for i in frame.initialization]
    frame["target_gripper_distance_mm"] = [physics[i].target_gripper_distance_mm for i in frame.initialization]
    table = frame[list(OUTCOME_COLUMNS)].sort_values(["policy", "initialization", "seed"]).reset_index(drop=True)
    path = table_path(task, root, bank)
    tmp = path.with_name(path.name + ".tmp")
    table.to_parquet(tmp, index=False)
    tmp.replace(path)
    return table


def bank_starts(task: str, splits: Sequence[str] = SPLITS, bank: str = BANK_VERSION) -> list[ReadoutStart]:
    """The bank's initializations of `splits` (`simulator.readout_inits`), in split then index order."""
    return [ReadoutStart(init.init_id, init.split, init.layout)
            for split in splits for init in initializations(task, split, bank)]


def carry_over(task: str, source: str, target: str, splits: Sequence[str], root: str | Path | None = None) -> int:
    """Copy the journaled outcomes of `splits` from bank `source` into bank `target`'s journal,
    unchanged (same cells: the same initializations, policies and seeds run by the same code);
    returns how many records were added. Version 2 takes version 1's `dev` outcomes this way."""
    have = _journal_keys(journal_path(task, root, target))
    wanted = {query_set_of(task, split) for split in splits}
    records = [r for r in read_journal(journal_path(task, root, source)) if r["query_set"] in wanted]
    new = [r for r in records
           if tuple(r[k] for k in ("mechanism", "query_set", "experience_id", "state_id", "seed")) not in have]
    path = journal_path(task, root, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    for record in new:
        append_record(path, record)
    return len(new)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_outcomes",
                                     description="Run the published image policies from the readout "
                                                 "banks' dev and eval initializations.")
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    parser.add_argument("--seed", type=int, action="append", help="repeatable; default 0 and 1")
    parser.add_argument("--limit", type=int, default=None, help="run at most this many new cells per task")
    parser.add_argument("--consolidate-every", type=int, default=120,
                        help="fold the journal into outcomes.parquet after this many new cells")
    parser.add_argument("--root", default=None, help="frozen data directory (default: the packaged one)")
    parser.add_argument("--bank", choices=BANKS, default=BANK_VERSION,
                        help="bank version; version 2 first takes version 1's dev outcomes (same cells)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    tasks = args.task or list(TASKS)
    seeds = args.seed or list(SEEDS)
    starts = {task: bank_starts(task, bank=args.bank) for task in tasks}
    if args.bank != "v1":
        for task in tasks:
            print(f"{task}: {carry_over(task, 'v1', args.bank, ('dev',), args.root)} dev outcomes taken "
                  "from bank v1", flush=True)
    physics = {task: start_physics(task, starts[task]) for task in tasks}
    # seed-major across tasks: both tasks' seed 0 before any seed 1
    for seed in seeds:
        for task in tasks:
            while True:
                ran = run_outcomes(task, starts[task], root=args.root, seeds=[seed], bank=args.bank,
                                   limit=args.consolidate_every, log=lambda line: print(line, flush=True))
                if _journal_keys(journal_path(task, args.root, args.bank)):
                    consolidate(task, starts[task], args.root, physics[task], args.bank)
                print(f"{task} seed {seed}: {ran} new cells; consolidated", flush=True)
                if not ran:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
