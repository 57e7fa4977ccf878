#!/usr/bin/env python
"""Version 2 of the Door query sets (issue 38): write the corrected states, run their cells.

    scripts/door_revision.py write               # query_sets/door-*/scenes.parquet, revision.json
    scripts/door_revision.py plan                # how many cells the re-run has, how many stored
    scripts/door_revision.py run [--seeds 0 1] [--settings S ...] [--out DIR] [--limit N]
    scripts/door_revision.py publish [--no-features]  # version 2 into the published root
    scripts/door_revision.py compare             # the Door settings' figures, version 1 and 2
    scripts/door_revision.py gates               # door-val level-2 gate episodes, versions 1 and 2
    scripts/door_revision.py record-gates        # gates_v2 into the Door policies' training.json

Both write under the revision root (benchmark_data/revision, or --root), beside the published
data; `run` executes the cells of the changed states with the published policies, one process
(resumable: run the same command again after a stop; finished cells are in the journals).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark_data.cells import load_cells  # noqa: E402
from benchmark_data.generation.door_revision import (  # noqa: E402
    DOOR_POLICY_SETTINGS, plan_revised_cells, publish, write_revision,
)
from benchmark_data.generation.rollouts import run_cells  # noqa: E402
from benchmark_data.paths import FROZEN_ROOT, REVISION_ROOT  # noqa: E402
from benchmark_data.registry import N_SEEDS  # noqa: E402


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("write", "plan", "run", "publish", "compare", "gates",
                                                "record-gates"))
    parser.add_argument("--no-features", action="store_true",
                        help="publish: leave the Door encoder features as they are")
    parser.add_argument("--root", type=Path, default=REVISION_ROOT, help="the revision root")
    parser.add_argument("--published", type=Path, default=FROZEN_ROOT, help="the published root")
    parser.add_argument("--out", type=Path, default=None, help="where cells go (default: --root)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(N_SEEDS)))
    parser.add_argument("--settings", nargs="+", default=list(DOOR_POLICY_SETTINGS))
    parser.add_argument("--limit", type=int, default=None, help="run only the first N cells planned")
    args = parser.parse_args(argv)
    if args.command == "write":
        from simulator.door_sim import DoorSim

        record = write_revision(DoorSim(), args.root, args.published)
        _log(f"wrote version {record['query_set_version']}: "
             + "; ".join(f"{q}: {len(ids)} states changed" for q, ids in record["changed"].items()))
        return 0
    if args.command == "publish":
        from simulator.door_sim import DoorSim
        from simulator.appearance import SceneRenderer

        sim = DoorSim()
        renderer = SceneRenderer(sim, task="door")
        try:
            kept = publish(sim, renderer, args.root, args.published, features=not args.no_features, log=_log)
        finally:
            renderer.close()
        _log(f"published data version {kept['superseded_by']}; {kept['data_version']} kept")
        return 0
    if args.command == "compare":
        from benchmark_data.pages.door_versions import numbers_table
        from benchmark_data.versions import known_versions

        print(numbers_table(known_versions(args.published), args.published))
        return 0
    if args.command in ("gates", "record-gates"):
        from benchmark_data.generation import door_val_gates

        out = args.root / "gates"
        if args.command == "gates":
            door_val_gates.run_gate_episodes(out, args.published, log=_log)
        for name, entry in door_val_gates.record_gates_v2(out, args.published).items():
            _log(f"{name}: gates_v2 {entry['groups']} passed={entry['gates_passed']}")
        return 0
    cells = plan_revised_cells(args.seeds, args.settings, args.root, args.published)
    if args.command == "plan":
        out = args.out or args.root
        stored = set()
        for mechanism, query_set in {(c.mechanism, c.query_set) for c in cells}:
            frame = load_cells(mechanism, query_set, out)
            stored.update(zip(frame.mechanism, frame.query_set, frame.experience_id, frame.state_id,
                              frame.seed.astype(int)))
        _log(f"{len(cells)} cells planned, {sum(c.key in stored for c in cells)} stored")
        return 0
    cells = cells[:args.limit] if args.limit is not None else cells
    run_cells(cells, workers=1, root=args.root, out=args.out or args.root, policies_root=args.published,
              log=_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
