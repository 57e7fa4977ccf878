"""Golden cells: stored cells re-executed from scratch give the frozen outcome and final state.

`expaudit data verify` re-executes stored cells with the code under test, so
a bug that both made and re-checks a cell agrees with itself: a runner that
executes every cell with seed 0 while the journal records seeds 0-4 passes
it. Here a handful of Replay and policy cells of the frozen data (seeds 0-4,
most of them not 0) go through the generation path (`run_cells`: executor,
journal, consolidation) into an empty cells store, and their success,
initial and final state hashes must equal the frozen ones. Every golden
cell other than seed 0 has another success than its seed-0 cell, so even
where only the success is compared a dropped seed shows; the frozen tables
themselves must hold one final state per seed.

Where the final hashes legitimately differ (docs/data.md, "What reproduces
where"), the comparison is skipped with the reason rather than weakened:

- Replay: bit for bit wherever numpy's OpenBLAS runs the pinned Haswell
  kernel (every x86-64 CPU with AVX2); elsewhere skipped.
- Policy, version 2 (the regenerated policies of docs/policy_protocol.md,
  their cells in the staging root until `expaudit data adopt-staging`
  publishes them): each cell records the machine parts that can change a
  closed-loop rollout (torch's CPU kernels, the BLAS kernel, the OpenGL
  renderer with its vector width). They are re-run in a child process; the
  initial state hashes are compared everywhere. On the cells' own CPU vendor
  (AMD) the re-run is compared bit for bit where it recorded the same parts,
  and skipped with the parts that differ elsewhere. On another vendor's CPU,
  where the same parts can still end a rollout in another final state, it is
  compared with that CPU model's recorded re-run (`RERUNS_FILE`, written by
  `scripts/golden_policy_reruns.py`), and skipped where none is recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from benchmark_data.cells import KEY_COLUMNS
from benchmark_data.paths import FROZEN_ROOT, cells_table
from tests.support.paths import REPO_ROOT
from tests.support.servers import service_env
from tests.support.golden import (MACHINE_PARTS, OUTCOME, POLICY_V2_CPU_VENDOR, POLICY_V2_GOLDEN,
                                  RERUNS_FILE, RERUN_PARTS, machine_parts, rerun_v2_golden, reruns,
                                  store_outcomes, v2_golden_outcomes, v2_home)

REPLAY_GOLDEN = (
    ("stack-orig", "stack-e013", "stack-orig-s12", 1),
    ("stack-orig", "stack-e007", "stack-orig-s20", 1),
    ("stack-orig", "stack-e007", "stack-orig-s22", 2),
    ("stack-orig", "stack-e010", "stack-orig-s20", 0),
    ("stack-fresh", "stack-e002", "stack-fresh-s12", 1),
    ("stack-fresh", "stack-e000", "stack-fresh-s13", 3),
    ("stack-base", "stack-e034", "base-stack-e034", 4),
    ("stack-base", "stack-e015", "base-stack-e015", 4),
)
"""(query set, experience, state, seed) of the golden Replay cells: short episodes, each
seed other than 0 with another success than the same experience and state under seed 0."""


def _frozen_outcomes(keys) -> dict[tuple, tuple]:
    """The frozen (success, state hash, final hash) of each cell key."""
    want = {}
    for mechanism, query_set in sorted({k[:2] for k in keys}):
        frame = pd.read_parquet(cells_table(mechanism, query_set))
        for row in frame[list(KEY_COLUMNS) + list(OUTCOME)].itertuples(index=False):
            key = (*row[:4], int(row[4]))
            if key in keys:
                want[key] = (int(row[5]), row[6], row[7])
    assert set(want) == set(keys), f"golden cells absent from the frozen data: {set(keys) - set(want)}"
    return want


def _rerun_outcomes(machine: dict) -> dict[tuple, tuple] | None:
    """The (success, state hash, final hash) of each golden cell as re-run on `machine` (its
    `RERUN_PARTS`), from `RERUNS_FILE`; None where no entry has that machine."""
    for entry in reruns():
        if entry["machine"] == machine:
            return {(*c["key"][:4], int(c["key"][4])): (c["success"], c["state_hash"], c["final_hash"])
                    for c in entry["cells"]}
    return None


def _differences(want: dict, got: dict) -> list[str]:
    """One line per golden cell and field that re-execution did not reproduce."""
    lines = []
    for key, stored in want.items():
        rerun = got.get(key, (None,) * len(OUTCOME))
        lines += [f"{key} {field}: stored {a!r}, re-run {b!r}"
                  for field, a, b in zip(OUTCOME, stored, rerun) if a != b]
    return lines


def _root_with_frozen_inputs(path):
    """A root that reads the frozen library, query sets and policies, with an empty cells store."""
    for name in ("libraries", "query_sets", "policies"):
        (path / name).symlink_to(FROZEN_ROOT / name, target_is_directory=True)
    (path / "cells").mkdir()
    return path


def test_frozen_tables_hold_one_final_state_per_seed():
    """Five seeds of one (experience, state) are five executions: a table made with one seed
    for all of them would repeat its final state."""
    tables = sorted((FROZEN_ROOT / "cells").glob("*.parquet"))
    assert tables
    for table in tables:
        frame = pd.read_parquet(table, columns=["experience_id", "state_id", "seed", "final_hash"])
        groups = frame.groupby(["experience_id", "state_id"])
        repeated = groups["final_hash"].nunique() != groups["seed"].nunique()
        assert not repeated.any(), f"{table.name}: {int(repeated.sum())} cells repeat a final state"


def test_golden_cells_differ_in_success_from_seed_0():
    """So that a dropped seed shows even where only the success could be compared."""
    keys = [("replay", *g) for g in REPLAY_GOLDEN]
    seeded = [k for k in keys if k[4] != 0]
    want = _frozen_outcomes(keys + [(*k[:4], 0) for k in seeded])
    assert len(seeded) >= len(keys) - 1
    assert [k for k in seeded if want[k][0] == want[(*k[:4], 0)][0]] == []


def test_golden_v2_policy_cells_differ_in_success_from_seed_0_and_cover_both_mechanisms():
    keys = list(POLICY_V2_GOLDEN)
    home = v2_home()
    want = v2_golden_outcomes(keys + [(*k[:4], 0) for k in keys], home)
    assert all(k[4] != 0 for k in keys)
    assert [k for k in keys if want[k][0] == want[(*k[:4], 0)][0]] == []
    assert {k[0] for k in keys} == {"policy", "policy_dr"}
    assert {k[1] for k in keys} >= {"stack-orig", "stack-fresh", "door-orig"}
    recorded = machine_parts(keys, home)
    assert all(parts["renderer"] for parts in recorded.values()), "made before renderers were recorded"


@pytest.mark.sim
def test_golden_replay_cells_reproduce_the_frozen_outcomes(tmp_path):
    pytest.importorskip("robosuite")
    from benchmark_data.generation.rollouts import run_cells
    from expaudit.numerics import BLAS_KERNEL, blas_kernel
    from simulator.executor import Cell

    if blas_kernel() != BLAS_KERNEL:
        pytest.skip(f"numpy's OpenBLAS runs {blas_kernel()!r}, not the {BLAS_KERNEL} kernel the "
                    "frozen Replay cells ran with: final states legitimately differ")
    keys = [("replay", *golden) for golden in REPLAY_GOLDEN]
    want = _frozen_outcomes(keys)
    root = _root_with_frozen_inputs(tmp_path)
    assert run_cells([Cell(*key) for key in keys], workers=1, root=root) == len(keys)
    assert _differences(want, store_outcomes(keys, root)) == []


@pytest.mark.sim
def test_a_behaviour_change_without_a_mechanism_bump_fails_the_golden_cells(tmp_path):
    """The golden cells are the guard that code versions rely on: here the Replay noise is
    changed in a copy of the simulator while its declared mechanism stays, and the golden cells
    re-run with that copy in a child process no longer reproduce the frozen outcomes."""
    pytest.importorskip("robosuite")
    import shutil

    from expaudit.numerics import BLAS_KERNEL, blas_kernel

    if blas_kernel() != BLAS_KERNEL:
        pytest.skip(f"numpy's OpenBLAS runs {blas_kernel()!r}, not {BLAS_KERNEL}: final states "
                    "legitimately differ, so only a change of success would show")
    mutated = tmp_path / "code"
    shutil.copytree(REPO_ROOT / "simulator", mutated / "simulator",
                    ignore=shutil.ignore_patterns("__pycache__"))
    replay = mutated / "simulator" / "replay.py"
    source = replay.read_text()
    assert "EPISODE_OFFSET_STD = 0.008\n" in source
    replay.write_text(source.replace("EPISODE_OFFSET_STD = 0.008\n", "EPISODE_OFFSET_STD = 0.012\n"))
    keys = [("replay", *golden) for golden in REPLAY_GOLDEN]
    (tmp_path / "root").mkdir()
    root = _root_with_frozen_inputs(tmp_path / "root")
    child = subprocess.run(
        [sys.executable, "-c", "import simulator, sys, ast; from simulator.provenance import code_version; "
         "from simulator.executor import Cell; from benchmark_data.generation.rollouts import run_cells; "
         "print(code_version()); print(simulator.__file__); "
         "run_cells([Cell(*k) for k in ast.literal_eval(sys.argv[1])], workers=1, root=sys.argv[2])",
         repr(keys), str(root)],
        cwd=tmp_path, env=service_env(PYTHONPATH=f"{mutated}:{REPO_ROOT}"), capture_output=True,
        text=True, timeout=900)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    from simulator.provenance import code_version

    version, imported = child.stdout.splitlines()[:2]
    assert imported.startswith(str(mutated))  # the child ran the changed copy
    assert version == code_version()  # no bump: the code version alone cannot tell
    differences = _differences(_frozen_outcomes(keys), store_outcomes(keys, root))
    assert differences, "a changed Replay noise reproduced every golden cell: the guard is blind"


@pytest.mark.sim
@pytest.mark.slow
def test_golden_v2_policy_cells_reproduce_the_regenerated_outcomes(tmp_path):
    pytest.importorskip("robosuite")
    pytest.importorskip("torch")
    pytest.importorskip("robomimic")
    from expaudit.numerics import cpu_has_avx2, cpu_vendor

    if not cpu_has_avx2():
        pytest.skip("this CPU lacks AVX2, so neither kernel the version-2 cells ran with is pinned here")
    keys = list(POLICY_V2_GOLDEN)
    home = v2_home()
    want, recorded = v2_golden_outcomes(keys, home), machine_parts(keys, home)
    store = rerun_v2_golden(keys, tmp_path / "store")
    got = store_outcomes(keys, store)
    assert [k for k in keys if got[k][1] != want[k][1]] == [], "the initial state depends on no machine"
    if cpu_vendor() != POLICY_V2_CPU_VENDOR:
        machines = {json.dumps(m, sort_keys=True) for m in machine_parts(keys, store, RERUN_PARTS).values()}
        assert len(machines) == 1, machines
        machine = json.loads(machines.pop())
        reference = _rerun_outcomes(machine)
        if reference is None:
            pytest.skip(f"this CPU is {cpu_vendor() or 'of an unknown vendor'}'s; the version-2 golden "
                        f"cells were made on {POLICY_V2_CPU_VENDOR} ones, and {RERUNS_FILE.name} has no "
                        f"re-run on this machine ({machine}) to compare with "
                        "(scripts/golden_policy_reruns.py records one)")
        assert set(reference) == set(keys), f"{RERUNS_FILE.name} holds other cells: record it again"
        assert _differences(reference, got) == []
        return
    ran = machine_parts(keys, store)
    differing = {part: (recorded[k][part], ran[k][part]) for k in keys for part in MACHINE_PARTS
                 if recorded[k][part] != ran[k][part]}
    if differing:
        pytest.skip(f"this machine differs in what a closed-loop rollout's last bits depend on "
                    f"(recorded, here): {differing}; final states legitimately differ")
    assert _differences(want, store_outcomes(keys, store)) == []
