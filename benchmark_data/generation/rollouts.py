"""The generation pipeline: library, query sets, then the outcome cells of the Replay settings.

Everything is regenerated from fixed seeds by `expaudit data generate`.
Cells are planned per setting; `--all` runs them in an order that completes
whole settings early (stack-orig experiences 0-9, which completes K=3-orig
and K=10-a; K=3-fresh; K=10-b; then experiences 10-49 for K=50), each
followed by the own-base cells of the experiences involved.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable

from benchmark_data.cells import consolidate, load_cells, writing_cells
from benchmark_data.generation.library_stream import build_stack_stream, replay_sources, write_stack_library
from benchmark_data.generation.query_set_build import stack_scene_rows
from benchmark_data.generation.recipe_gates import check_go
from benchmark_data.paths import BASE_QUERY_SET, cells_journal, library_dir, query_set_dir
from benchmark_data.policy_files import policy_dirs
from benchmark_data.query_sets import read_scenes, write_scenes
from benchmark_data.registry import (
    LIBRARY_IDS,
    N_SEEDS,
    QUERY_SETS,
    Mechanism,
    experience_id,
    get_setting,
)
from expaudit.errors import InvalidInput, UserError
from simulator.door_scenes import DoorLayout
from simulator.executor import Cell, ReplayWorld, execute
from simulator.policy_executor import PolicyScene, PolicyWorld, execute_policy
from simulator.provenance import policy_mechanism_of
from simulator.stack_scenes import StackLayout, query_states
from simulator.stack_sim import StackSim

PROGRESS_EVERY = 25
"""Log a progress line every this many cells."""


class NotGeneratedHereError(UserError, ValueError):
    """A setting whose outcomes this pipeline does not produce (image policies, sealed sets)."""


class MixedCells(InvalidInput, ValueError):
    """Cells one run cannot take together: Replay with policy cells, or policy cells of two tasks."""


def base_state_id(eid: str) -> str:
    """State id of an experience's own base scene in the pseudo query set `stack-base`."""
    return f"base-{eid}"


def ensure_stack_inputs(query_sets: Iterable[str], root=None, log: Callable = lambda s: None):
    """Build the Stack library and the named query sets if their files are missing."""
    missing_lib = not (library_dir(LIBRARY_IDS["stack"], root) / "experiences.parquet").exists()
    missing_qs = [q for q in query_sets if not (query_set_dir(q, root) / "scenes.parquet").exists()]
    if not missing_lib and not missing_qs:
        return
    sim = StackSim()
    if missing_lib:
        log("recording the Stack stream ...")
        accepted, rows = build_stack_stream(sim)
        write_stack_library(accepted, rows, root)
        log(f"stream: {len(rows)} draws, {len(accepted)} accepted")
    for q in missing_qs:
        write_scenes(q, stack_scene_rows(q, sim), root)
        log(f"query set {q}: scenes written")


def _replay_cells(query_set: str, eids: Iterable[str], state_ids: list[str]):
    return [Cell("replay", query_set, eid, sid, seed)
            for eid in eids for sid in state_ids for seed in range(N_SEEDS)]


def _base_cells(eids: Iterable[str]):
    return [Cell("replay", BASE_QUERY_SET["stack"], eid, base_state_id(eid), seed)
            for eid in eids for seed in range(N_SEEDS)]


def plan_policy_setting(setting_id: str, seeds: Iterable[int] = range(N_SEEDS), root=None) -> list:
    """The cells of a policy setting, one per render, seed-major: every seed completes in turn."""
    setting = get_setting(setting_id)
    if setting.mechanism not in (Mechanism.POLICY, Mechanism.POLICY_DR):
        raise NotGeneratedHereError(f"setting {setting_id!r} is not a policy setting")
    scene_ids = list(read_scenes(setting.query_set, root)["scene_id"])
    return [Cell(setting.mechanism.value, setting.query_set, eid, sid, seed)
            for seed in seeds for eid in setting.experience_ids for sid in scene_ids]


def plan_setting(setting_id: str, root=None) -> list:
    """All cells of one setting (camera-blind: one per physical state) plus own-base cells."""
    setting = get_setting(setting_id)
    if setting.mechanism in (Mechanism.POLICY, Mechanism.POLICY_DR):
        return plan_policy_setting(setting_id, root=root)
    if setting.mechanism is not Mechanism.REPLAY or setting.task != "stack":
        raise NotGeneratedHereError(
            f"setting {setting_id!r} ({setting.mechanism.value}, {setting.task}): "
            f"this pipeline generates Stack Replay outcomes only")
    if setting.sealed:
        raise NotGeneratedHereError(
            f"setting {setting_id!r} is sealed: its cells are filled on demand, never published")
    states = [s.state_id for s in query_states(setting.query_set)]
    return (_replay_cells(setting.query_set, setting.experience_ids, states)
            + _base_cells(setting.experience_ids))


def plan_all() -> list:
    """The published Replay cells, in the order that completes settings earliest."""
    orig = [s.state_id for s in query_states("stack-orig")]
    fresh = [s.state_id for s in query_states("stack-fresh")]

    def ids(indices: range) -> list[str]:
        return [experience_id("stack", i) for i in indices]

    return (_replay_cells("stack-orig", ids(range(0, 10)), orig) + _base_cells(ids(range(0, 10)))
            + _replay_cells("stack-fresh", ids(range(0, 3)), fresh)
            + _replay_cells("stack-orig", ids(range(50, 60)), orig) + _base_cells(ids(range(50, 60)))
            + _replay_cells("stack-orig", ids(range(10, 50)), orig) + _base_cells(ids(range(10, 50))))


def build_world(cells, root=None):
    """The Replay inputs the cells need, read from the frozen library and query sets."""
    sources = replay_sources(LIBRARY_IDS["stack"], root)
    states = {}
    for q in {c.query_set for c in cells}:
        if q == BASE_QUERY_SET["stack"]:
            states.update({base_state_id(eid): base for eid, (base, _) in sources.items()})
        else:
            states.update({s.state_id: s.layout for s in query_states(q)})
    return ReplayWorld(experiences=sources, states=states)


def build_policy_world(cells, root=None, policies_root=None):
    """The scenes (from `root`) and frozen policies (from `policies_root`, default `root`) the
    policy cells need (one task per call)."""
    tasks = {QUERY_SETS[c.query_set] for c in cells}
    if len(tasks) != 1:
        raise MixedCells(f"policy cells of one task per run, got {sorted(tasks)}")
    task = tasks.pop()
    Layout = StackLayout if task == "stack" else DoorLayout
    scenes = {}
    for q in {c.query_set for c in cells}:
        for row in read_scenes(q, root).itertuples(index=False):
            scenes[row.scene_id] = PolicyScene(row.scene_id, row.state_id, int(row.appearance_draw),
                                               Layout.from_dict(json.loads(row.layout)))
    dirs = policy_dirs(task, root if policies_root is None else policies_root)
    absent = sorted({(c.mechanism, c.experience_id) for c in cells} - set(dirs))
    if absent:
        raise NotGeneratedHereError(f"no frozen policy for {absent[0][0]} {absent[0][1]!r}: "
                                    f"train it first with `expaudit data train-policies`")
    return PolicyWorld(task=task, scenes=scenes, policy_dirs=dirs)


def run_cells(cells: list, *, workers: int = 2, root=None, out=None, policies_root=None,
              require_go: bool = True, log: Callable = lambda s: None) -> int:
    """Execute the cells not yet stored; results go to journals, folded into Parquet at the end.

    Loaders read table and journal together, so a long run's progress is visible
    while it runs, and a killed run's journal is folded in by the next run.
    Inputs come from `root`; cells (and the policies that run them) live in
    `out`, default `root`: a staging root holds regenerated policies and their
    cells apart from the published ones until they are complete. `policies_root`
    (default `out`) holds the policies alone, where the cells of a revision of the
    query sets are run by the published policies (`door_revision`). Cells of
    mechanism-2 policies run only once the protocol's go / no-go says go
    (`recipe_gates.check_go`; `require_go=False` for small-scale tests).
    """
    store = root if out is None else out
    with writing_cells(store):
        return _run_cells(cells, workers, root, store, store if policies_root is None else policies_root,
                          require_go, log)


def _run_cells(cells: list, workers: int, root, store, policies, require_go: bool, log: Callable) -> int:
    """`run_cells` while its store is marked as being written."""
    groups = sorted({(c.mechanism, c.query_set) for c in cells})
    done = set()
    for mech, q in groups:
        consolidate(mech, q, store)
        frame = load_cells(mech, q, store)
        done.update(zip(frame.mechanism, frame.query_set, frame.experience_id, frame.state_id,
                        frame.seed.astype(int)))
    todo = [c for c in cells if c.key not in done]
    log(f"{len(cells)} cells planned, {len(cells) - len(todo)} already stored, {len(todo)} to run "
        f"on {workers} worker(s)")
    if not todo:
        return 0
    def journal_for(cell):
        return cells_journal(cell.mechanism, cell.query_set, store)

    if all(c.mechanism == Mechanism.REPLAY.value for c in todo):
        results = execute(todo, build_world(todo, root), journal_for, workers=workers)
    elif all(c.mechanism != Mechanism.REPLAY.value for c in todo):
        world = build_policy_world(todo, root, policies)
        for directory in {world.policy_dirs[(c.mechanism, c.experience_id)] for c in todo}:
            policy_mechanism_of(directory)  # a policy of a retired mechanism is refused before any cell
        if require_go:
            check_go(policies)
        results = execute_policy(todo, world, journal_for, workers=workers)
    else:
        raise MixedCells("run Replay and policy cells in separate calls")
    start = time.time()
    n = 0
    try:
        for n, _ in enumerate(results, start=1):
            if n % PROGRESS_EVERY == 0 or n == len(todo):
                rate = n / (time.time() - start)
                eta = (len(todo) - n) / rate if rate else float("inf")
                log(f"{n}/{len(todo)} cells, {rate:.2f} cells/s, ETA {eta / 60:.1f} min")
    finally:
        for mech, q in groups:
            consolidate(mech, q, store)
    return n
