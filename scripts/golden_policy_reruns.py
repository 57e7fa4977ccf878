#!/usr/bin/env python
"""Record this machine's re-run of the version-2 golden policy cells, for CPUs unlike the cells' own.

    scripts/golden_policy_reruns.py    # adds or replaces this machine's entry in tests/golden_policy_v2_reruns.json

The published policy cells were made on AMD CPUs. On a CPU of another vendor
a closed-loop rollout can end in another final state under the same pinned
kernels and renderer (docs/data.md, "What reproduces where"), so there
`tests/test_golden_cells.py` compares a re-run with this record of the same
CPU model and machine parts instead: a later change to the runner that moves
a trajectory still shows on that machine. The record keeps each cell's
success, initial and final state hash, the CPU, the machine parts and the
published success beside it (where they differ, the entry says so).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import runner  # noqa: E402,F401  (pins the BLAS and torch kernels before numpy loads)
from benchmark_data.paths import FROZEN_ROOT  # noqa: E402
from tests.test_golden_cells import (  # noqa: E402
    POLICY_V2_GOLDEN, RERUN_PARTS, _machine_parts, _run_cells_into, _store_outcomes,
    _v2_golden_outcomes, _v2_home, write_rerun,
)


def main() -> int:
    keys = list(POLICY_V2_GOLDEN)
    home = _v2_home()
    published = _v2_golden_outcomes(keys, home)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        (store / "policies").symlink_to(home / "policies", target_is_directory=True)
        (store / "cells").mkdir()
        _run_cells_into(keys, str(FROZEN_ROOT), str(store))
        got = _store_outcomes(keys, store)
        parts = _machine_parts(keys, store, RERUN_PARTS)
    machines = {tuple(sorted(p.items())) for p in parts.values()}
    if len(machines) != 1:
        sys.stderr.write(f"the cells recorded different machine parts: {sorted(machines)}\n")
        return 1
    entry = write_rerun(dict(next(iter(machines))), {k: got[k] for k in keys}, published)
    print(f"recorded {len(keys)} cells for {entry['machine']['cpu']}; "
          f"{entry['final_state_differs_from_published']} end in another final state than "
          f"published, {entry['success_differs_from_published']} with another success")
    return 0


if __name__ == "__main__":
    sys.exit(main())
