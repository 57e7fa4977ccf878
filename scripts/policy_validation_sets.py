#!/usr/bin/env python
"""Write the record of the validation query sets: states, disjointness check, nearest training layouts.

    scripts/policy_validation_sets.py            # rewrites benchmark_data/validation/<set>.json
    scripts/policy_validation_sets.py --check    # exits 1 if a record differs from the code

One JSON file per validation set (`benchmark_data.query_sets.VALIDATION_SEEDS`):
each state's id, level and layout, and for every frozen policy of the task the
distance (m, `layout_distance`) from each state to the nearest of that
policy's demonstration layouts. Before writing, `check_validation_disjoint`
runs against every frozen policy's demonstration layouts and draw keys.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark_data.generation.query_set_build import (  # noqa: E402
    check_validation_disjoint, nearest_training_distances, validation_states,
)
from benchmark_data.policy_files import policy_experiences, read_training  # noqa: E402
from benchmark_data.query_sets import VALIDATION_SEEDS, VALIDATION_TASK  # noqa: E402

OUT = REPO / "benchmark_data" / "validation"


def _layout_cls(task: str):
    if task == "stack":
        from simulator.stack_scenes import StackLayout

        return StackLayout
    from simulator.door_scenes import DoorLayout

    return DoorLayout


def record(name: str, root=None) -> dict:
    """The record of one validation set (checked for overlaps first)."""
    task = VALIDATION_TASK[name]
    layout_cls = _layout_cls(task)
    policies = {}
    all_layouts, all_keys = [], []
    for t, mechanism, eid in policy_experiences():
        if t != task:
            continue
        demos = read_training(mechanism, eid, root)["demos"]
        layouts = [layout_cls.from_dict(d["layout"]) for d in demos]
        all_layouts += layouts
        all_keys += [d["draw_key"] for d in demos]
        rows = nearest_training_distances(name, layouts)
        policies[f"{mechanism}/{eid}"] = {r["state_id"]: r["nearest_m"] for r in rows}
    check_validation_disjoint(name, all_layouts, sorted(set(all_keys)))
    return {
        "validation_set": name, "task": task, "seed": VALIDATION_SEEDS[name],
        "disjoint_from": "every frozen query set of the task (seeds, state ids, layouts) and every frozen "
                         "policy's demonstration layouts and appearance draw keys",
        "distance": "nearest demonstration layout, metres; stack: larger cube xy displacement, door: door base xy",
        "states": [{"state_id": s.state_id, "layout_level": s.layout_level, "layout": s.layout.to_dict()}
                   for s in validation_states(name)],
        "nearest_training_m": policies,
    }


def text(name: str) -> str:
    return json.dumps(record(name), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the written records, write nothing")
    args = parser.parse_args(argv)
    differ = []
    for name in VALIDATION_SEEDS:
        path = OUT / f"{name}.json"
        new = text(name)
        if args.check:
            if not path.exists() or path.read_text() != new:
                differ.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(new)
    if differ:
        sys.stderr.write(f"validation records out of date: {', '.join(differ)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
