"""The version-2 golden policy cells and their re-runs on CPUs unlike the cells' own: shared by
the golden-cell tests and scripts/golden_policy_reruns.py, which records a machine's re-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmark_data.cells import KEY_COLUMNS, load_cells
from benchmark_data.paths import FROZEN_ROOT, STAGING_ROOT
from benchmark_data.policy_files import is_trained, policy_dir
from simulator.provenance import policy_code_versions, policy_mechanism_of
from tests.support.paths import REPO_ROOT, TESTS
from tests.support.servers import service_env


POLICY_V2_GOLDEN = (
    ("policy", "stack-orig", "stack-e002", "stack-orig-s23-d0", 1),
    ("policy", "stack-fresh", "stack-e000", "stack-fresh-s07-d1", 1),
    ("policy_dr", "stack-orig", "stack-e000", "stack-orig-s30-d1", 1),
    ("policy_dr", "stack-orig", "stack-e000", "stack-orig-s39-d2", 1),
    ("policy", "door-orig", "door-e000", "door-orig-s08-d3", 1),
    ("policy", "door-orig", "door-e000", "door-orig-s06-d1", 1),
)
"""(mechanism, query set, experience, scene, seed) of the golden cells of the version-2
policies: short episodes of both mechanisms, both tasks and both Stack query sets, each with
another success than the same experience and scene under seed 0."""


POLICY_V2_CPU_VENDOR = "AuthenticAMD"
"""The CPUs the version-2 golden cells were made and checked on (AMD EPYC, with and without
AVX-512); the cells of the version-1 policies showed that another vendor's CPU can end a rollout
in another final state under the same instruction sets."""


MACHINE_PARTS = ("torch_cpu_capability", "numpy_blas_kernel", "renderer")
"""The packages entries of a policy cell that name machine parts a rollout's last bits depend on."""


RERUNS_FILE = TESTS / "simulator" / "golden_policy_v2_reruns.json"
"""Re-runs of the version-2 golden cells on CPUs of another vendor than `POLICY_V2_CPU_VENDOR`
(`scripts/golden_policy_reruns.py`): there a re-run is compared with the entry of its machine."""


RERUN_PARTS = MACHINE_PARTS + ("cpu",)
"""What an entry of `RERUNS_FILE` shares with a re-run compared with it: the machine parts and
the CPU model (vendor, family, model): a re-run was shown to repeat only on the model it ran on."""


OUTCOME = ("success", "state_hash", "final_hash")


def store_outcomes(keys, root) -> dict[tuple, tuple]:
    """The (success, state hash, final hash) of each cell key in a store (journals included)."""
    got = {}
    for mechanism, query_set in sorted({k[:2] for k in keys}):
        frame = load_cells(mechanism, query_set, root)
        for row in frame[list(KEY_COLUMNS) + list(OUTCOME)].itertuples(index=False):
            got[(*row[:4], int(row[4]))] = (int(row[5]), row[6], row[7])
    return got


def v2_home() -> Path:
    """The root holding the version-2 policies and their cells: the staging root until
    `expaudit data adopt-staging` publishes them (and removes the staged copies), then the
    frozen root."""
    mechanism, _, experience_id = POLICY_V2_GOLDEN[0][:3]
    return STAGING_ROOT if is_trained(mechanism, experience_id, STAGING_ROOT) else FROZEN_ROOT


def v2_golden_outcomes(keys, home: Path) -> dict[tuple, tuple]:
    """The stored outcomes of version-2 golden cells (and of any `keys` besides), each checked
    to be made by its policy's current code version under `home`."""
    want = {k: v for k, v in store_outcomes(keys, home).items() if k in set(keys)}
    assert set(want) == set(keys), f"golden cells absent from {home}: {sorted(set(keys) - set(want))}"
    versions = {}
    for mechanism, query_set in {k[:2] for k in keys}:
        frame = load_cells(mechanism, query_set, home)
        versions.update({(mechanism, query_set, e, st, int(sd)): v for e, st, sd, v in zip(
            frame.experience_id, frame.state_id, frame.seed, frame.code_version)})
    for key in keys:
        directory = str(policy_dir(key[0], key[2], home))
        assert policy_mechanism_of(directory) == 2, f"{directory} is not a version-2 policy"
        assert versions[key] in policy_code_versions(directory), (
            f"golden cell {key} was made by other weights or another mechanism than {directory}'s "
            "current ones (trained again): choose the golden cells anew")
    return want


def machine_parts(keys, root, parts=MACHINE_PARTS) -> dict[tuple, dict]:
    """The `parts` (by default `MACHINE_PARTS`) each cell recorded in its packages."""
    out = {}
    for mechanism, query_set in sorted({k[:2] for k in keys}):
        frame = load_cells(mechanism, query_set, root)
        for row in frame[list(KEY_COLUMNS) + ["packages"]].itertuples(index=False):
            key = (*row[:4], int(row[4]))
            if key in keys:
                packages = json.loads(row[5])
                out[key] = {part: packages.get(part) for part in parts}
    return out


def reruns() -> list[dict]:
    return json.loads(RERUNS_FILE.read_text())["reruns"] if RERUNS_FILE.exists() else []


def write_rerun(machine: dict, outcomes: dict, published: dict) -> dict:
    """Add or replace the entry of `machine` in `RERUNS_FILE` with the golden cells' `outcomes`
    there, beside the `published` ones; returns the entry."""
    entry = {"machine": machine,
             "cells": [{"key": list(key), "success": success, "state_hash": state, "final_hash": final,
                        "published_success": published[key][0]}
                       for key, (success, state, final) in sorted(outcomes.items())],
             "final_state_differs_from_published": sum(outcomes[k][2] != published[k][2] for k in outcomes),
             "success_differs_from_published": sum(outcomes[k][0] != published[k][0] for k in outcomes)}
    kept = [e for e in reruns() if e["machine"] != machine] + [entry]
    kept.sort(key=lambda e: json.dumps(e["machine"], sort_keys=True))
    about = ("Re-runs of the version-2 golden policy cells (tests/simulator/test_golden_cells.py) on CPUs of "
             "another vendor than the cells' own, where a rollout can end in another final state; "
             "written by scripts/golden_policy_reruns.py")
    RERUNS_FILE.write_text(json.dumps({"about": about, "reruns": kept}, indent=1, sort_keys=True) + "\n")
    return entry


def run_cells_into(keys, inputs, store) -> None:
    """Run the cells `keys` with the inputs of `inputs` into the cells store `store` (its
    `policies` are the ones that ran them), one call per task."""
    from benchmark_data.generation.rollouts import run_cells
    from benchmark_data.registry import QUERY_SETS
    from simulator.executor import Cell

    cells = [Cell(*key) for key in keys]
    for task in sorted({QUERY_SETS[c.query_set] for c in cells}):
        run_cells([c for c in cells if QUERY_SETS[c.query_set] == task], workers=1, root=inputs,
                  out=store)


def rerun_v2_golden(keys, store: Path) -> Path:
    """Re-run the version-2 golden cells `keys` into a new cells store `store` (returned) that reads
    the frozen query sets and the policies that made them, in a child process as a generation
    worker runs: kernels pinned before numpy loads, one thread, no EXPAUDIT_* settings."""
    store.mkdir()
    (store / "policies").symlink_to(v2_home() / "policies", target_is_directory=True)
    (store / "cells").mkdir()
    child = subprocess.run(
        [sys.executable, "-c", "import simulator, sys; from tests.support.golden import run_cells_into; "
         "import ast; run_cells_into(ast.literal_eval(sys.argv[1]), sys.argv[2], sys.argv[3])",
         repr(keys), str(FROZEN_ROOT), str(store)],
        cwd=REPO_ROOT, env=service_env(PYTHONPATH=str(REPO_ROOT)), capture_output=True, text=True,
        timeout=900)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    return store
