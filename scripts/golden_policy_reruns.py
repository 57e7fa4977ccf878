#!/usr/bin/env python
"""Record this machine's re-run of the version-2 golden policy cells, for CPUs unlike the cells' own.

    scripts/golden_policy_reruns.py    # adds or replaces this machine's entry in tests/simulator/golden_policy_v2_reruns.json

The published policy cells were made on AMD CPUs. On a CPU of another vendor
a closed-loop rollout can end in another final state under the same pinned
kernels and renderer (docs/data.md, "What reproduces where"), so there
`tests/simulator/test_golden_cells.py` compares a re-run with this record of the same
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

from expaudit.numerics import cpu_vendor  # noqa: E402
from tests.support.golden import (  # noqa: E402
    POLICY_V2_CPU_VENDOR, POLICY_V2_GOLDEN, RERUN_PARTS, machine_parts, store_outcomes,
    v2_golden_outcomes, v2_home, rerun_v2_golden, write_rerun,
)


def main() -> int:
    if cpu_vendor() == POLICY_V2_CPU_VENDOR:
        sys.stderr.write(f"this CPU is {POLICY_V2_CPU_VENDOR}'s, the published cells' own vendor: the golden "
                         "test compares a re-run here with the published cells, so nothing is recorded\n")
        return 1
    keys = list(POLICY_V2_GOLDEN)
    published = v2_golden_outcomes(keys, v2_home())
    with tempfile.TemporaryDirectory() as tmp:
        store = rerun_v2_golden(keys, Path(tmp) / "store")
        got = store_outcomes(keys, store)
        parts = machine_parts(keys, store, RERUN_PARTS)
    moved = [k for k in keys if got[k][1] != published[k][1]]
    if moved:
        sys.stderr.write(f"initial states differ from the published ones, which no machine explains: {moved}\n")
        return 1
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
