"""The readout audit's reference rows: every reference representation's report on a task's bank.

One engine run per (task, split) over every representation whose features were computed
(`benchmark_data.generation.readout_features`), so the primary sign tests of all the task's
reference rows form one Holm family, as they are published together. The report is the
engine's (`leaderboard.readout.run_readout_audit`), with two additions: `not_computed`
(each representation that could not run here, with its reason) and `features` (each
representation's weights hash, code version and dtype, from its `features.json`).

Written to `readout/<task>-v1/reports/reference-<split>.json`.

    python -m benchmark_data.generation.readout_reports --task door [--split confirm]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from benchmark_data.generation.readout_features import (COMPUTED, FEATURES_JSON, TASKS, bank_dir, features_dir,
                                                        representation_names)
from expaudit.errors import DataNotFound
from leaderboard.readout import read_bank, read_features, run_readout_audit

SPLITS = ("confirm", "dev")
REPORTS = "reports"


def report_path(task: str, split: str, root: str | Path | None = None) -> Path:
    return bank_dir(task, root) / REPORTS / f"reference-{split}.json"


def reference_report(task: str, *, split: str = "confirm", root: str | Path | None = None,
                     sealed_labels: str | Path | None = None) -> dict:
    """The engine's report of every computed reference representation of `task` on `split`."""
    bank = read_bank(bank_dir(task, root), sealed_labels=sealed_labels)
    representations, not_computed, provenance = [], [], {}
    for name in representation_names(task):
        meta_path = features_dir(task, name, root) / FEATURES_JSON
        if not meta_path.is_file():
            not_computed.append({"name": name, "reason": "features not generated"})
            continue
        meta = json.loads(meta_path.read_text())
        if meta["status"] != COMPUTED or not meta.get("complete"):
            not_computed.append({"name": name, "reason": meta.get("reason", "features incomplete")})
            continue
        representations.append(read_features(features_dir(task, name, root), name))
        provenance[name] = {key: meta[key] for key in ("content_hash", "code_version", "dtype", "views",
                                                       "dimension", "rows")}
    if not representations:
        raise DataNotFound(f"{task}: no reference representation has features")
    report = run_readout_audit(bank, representations, split=split)
    report["not_computed"] = not_computed
    report["features"] = provenance
    return report


def write_reference_report(task: str, *, split: str = "confirm", root: str | Path | None = None,
                           sealed_labels: str | Path | None = None) -> Path:
    """Compute and write `reports/reference-<split>.json`; returns its path."""
    report = reference_report(task, split=split, root=root, sealed_labels=sealed_labels)
    path = report_path(task, split, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True, allow_nan=False) + "\n")
    tmp.replace(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_reports",
                                     description="Reference rows of the readout audit on a task's bank.")
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    parser.add_argument("--split", choices=SPLITS, default="confirm")
    parser.add_argument("--sealed-labels", action="append", default=[], metavar="TASK=FILE",
                        help="a task's sealed labels file (confirm needs it); repeatable")
    parser.add_argument("--root", default=None, help="frozen data directory (default: the packaged one)")
    args = parser.parse_args(argv)
    sealed = dict(item.split("=", 1) for item in args.sealed_labels)
    status = 0
    for task in args.task or TASKS:
        try:
            path = write_reference_report(task, split=args.split, root=args.root, sealed_labels=sealed.get(task))
        except DataNotFound as exc:
            print(f"{task}: {exc}", file=sys.stderr)
            status = 2
            continue
        print(f"{task}: wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
