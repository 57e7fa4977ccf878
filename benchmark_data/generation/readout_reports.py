"""The readout audit's reference rows: every reference representation's report on both tasks' banks.

One engine run per (task, split) over every representation whose features were computed
(`benchmark_data.generation.readout_features`); a reference representation that could not
run stays in as `not_computed` with its reason, and its two tests stay in the family with
p = 1. The reports of both tasks are published together, so their primary tests form one Holm
family (docs/readout_protocol.md, "The family of primary tests": 2 tests x 9 representations
x 2 tasks = 36): each report's `primary_tests.family` lists every member, its `family_size`
counts them and each `p_holm` is adjusted over the whole family. The report is otherwise the
engine's (`leaderboard.readout.run_readout_audit`), with `features` added (each
representation's weights hash, code version and dtype, from its `features.json`).

Written to `readout/<task>-<bank>/reports/reference-<split>.json`, both tasks at once, each with
its page `reference-<split>.html` (`leaderboard.site.readout_report.render_readout_html`: inline
SVG, the published JSON's numbers and plots only). The `dev` report is published whole: per
initialization values, and the prediction-against-coordinate curves of the first initializations
(`leaderboard.readout.defaults.CURVE_INITIALIZATIONS`) of each representation. On a sealed
split (confirm) that published file is the report's sealed view (`leaderboard.readout.sealed_view`:
no per-initialization values or curves, which would reveal the labels); the whole report goes
to the sealed directory as `reports/<task>-reference-<split>.json`.

    python -m benchmark_data.generation.readout_reports [--split confirm] \
        --sealed-labels door=FILE --sealed-labels stack=FILE

The sealed labels live in the sealed directory (`benchmark_data.readout_banks.sealed_dir`,
env `EXPAUDIT_READOUT_SEALED`); without `--sealed-labels` a task's file is taken from there
when present. `--adjust-only` re-runs only the joint Holm adjustment on the reports already
written: it reads each test's unadjusted p-value, so it needs neither labels nor features.
`--html-only` renders the pages again from the written JSON (no labels, no features).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import Mapping, Sequence

from benchmark_data.generation.readout_features import COMPUTED, FEATURES_JSON, features_dir, representation_names
from benchmark_data.readout_banks import BANK_VERSION, BANKS, SEALED_SPLITS, TASKS, bank_dir, sealed_dir, sealed_labels_path
from expaudit.errors import DataNotFound, InvalidInput
from leaderboard.readout import holm_family, read_bank, read_features, run_readout_audit, sealed_view
from leaderboard.readout.defaults import MIN_ESTIMABLE_INITIALIZATIONS
from leaderboard.readout.sign_tests import SignTest
from leaderboard.site.readout_report import render_readout_html

SPLITS = ("confirm", "dev")
REPORTS = "reports"
DEV_FAILURE_NOTE = ("The failure predictors are fitted on dev and scored on the evaluation "
                    "initializations, whose labels are sealed: they are in the confirm reference report.")
FAMILY_SCOPE = "the primary tests of every reference representation of both tasks, published together"


def report_path(task: str, split: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    return bank_dir(task, root, bank) / REPORTS / f"reference-{split}.json"


def html_path(task: str, split: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    """The page of the published report (same directory and stem as its JSON)."""
    return report_path(task, split, root, bank).with_suffix(".html")


def sealed_report_path(task: str, split: str, sealed: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    """Where the whole report of a sealed split is kept (the sealed directory, never published)."""
    name = f"{task}-reference-{split}.json" if bank == "v1" else f"{task}-{bank}-reference-{split}.json"
    return Path(sealed or sealed_dir()) / REPORTS / name


def _sealed_default(task: str, split: str, bank: str = BANK_VERSION) -> Path | None:
    """The task's sealed labels file in the sealed directory, when the split needs it and it is there."""
    path = sealed_labels_path(task, None, bank)
    return path if split in SEALED_SPLITS and path.is_file() else None


def reference_report(task: str, *, split: str = "confirm", root: str | Path | None = None,
                     sealed_labels: str | Path | None = None,
                     min_estimable: int = MIN_ESTIMABLE_INITIALIZATIONS, bank_version: str = BANK_VERSION) -> dict:
    """The engine's report of every reference representation of `task` on `split`, its primary
    tests Holm-adjusted over this task alone (`reference_reports` adjusts them over both tasks).
    `min_estimable` is the protocol's estimability gate (lower only for small test banks)."""
    directory = bank_dir(task, root, bank_version)
    bank = read_bank(directory, sealed_labels=sealed_labels)
    representations, not_computed, provenance = [], [], {}
    for name in representation_names(task):
        meta_path = features_dir(task, name, root, bank_version) / FEATURES_JSON
        if not meta_path.is_file():
            not_computed.append({"name": name, "reason": "features not generated"})
            continue
        meta = json.loads(meta_path.read_text())
        if meta["status"] != COMPUTED or not meta.get("complete"):
            not_computed.append({"name": name, "reason": meta.get("reason", "features incomplete")})
            continue
        representations.append(read_features(features_dir(task, name, root, bank_version), name))
        provenance[name] = {key: meta[key] for key in ("content_hash", "code_version", "dtype", "views",
                                                       "dimension", "rows")}
    if not representations:
        raise DataNotFound(f"{task}: no reference representation has features")
    report = run_readout_audit(bank, representations, split=split, min_estimable=min_estimable,
                               not_computed=[row["name"] for row in not_computed])
    report["not_computed"] = not_computed
    report["features"] = provenance
    for rep in report["representations"]:  # where its features sit in the bank, not on this machine
        rep["source"] = features_dir(task, rep["name"], root, bank_version).relative_to(directory).as_posix()
    if split not in SEALED_SPLITS:
        report["notes"] = [*report["notes"], DEV_FAILURE_NOTE]
    return report


def _sign_test(row: dict) -> SignTest:
    names = {f.name for f in fields(SignTest)} - {"p_holm"}
    missing = sorted(names - set(row))
    if missing:
        raise InvalidInput(f"primary_tests.tests[]: '{missing[0]}' missing in {row.get('test_id')!r}")
    return SignTest(**{name: row[name] for name in names})


def joint_family(reports: Mapping[str, dict]) -> dict[str, dict]:
    """The reports (by task) with their primary tests Holm-adjusted as one family.

    Each test keeps its unadjusted `p_value`; `p_holm` is recomputed over every test of every
    report (`leaderboard.readout.holm_family`: tests without a p-value stay listed and out of
    the adjustment). Each report's `primary_tests` then names the whole family.
    """
    tests = [_sign_test(row) for task in reports for row in reports[task]["primary_tests"]["tests"]]
    adjusted = {t.test_id: t.p_holm for t in holm_family(tests)}
    family = [t.test_id for t in tests]
    out = {}
    for task, report in reports.items():
        block = dict(report["primary_tests"])
        block["tests"] = [{**row, "p_holm": adjusted[row["test_id"]]} for row in block["tests"]]
        block.update(family=family, family_size=len(family), family_scope=FAMILY_SCOPE)
        out[task] = {**report, "primary_tests": block}
    return out


def reference_reports(*, split: str = "confirm", root: str | Path | None = None,
                      sealed_labels: Mapping[str, str | Path] | None = None,
                      min_estimable: int = MIN_ESTIMABLE_INITIALIZATIONS,
                      bank: str = BANK_VERSION) -> dict[str, dict]:
    """Both tasks' reference reports on `split`, their primary tests one Holm family."""
    sealed_labels = sealed_labels or {}
    reports = {task: reference_report(task, split=split, root=root, min_estimable=min_estimable, bank_version=bank,
                                      sealed_labels=sealed_labels.get(task) or _sealed_default(task, split, bank))
               for task in TASKS}
    return joint_family(reports)


def _write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


def _write(path: Path, report: dict) -> Path:
    return _write_text(path, json.dumps(report, indent=1, sort_keys=True, allow_nan=False) + "\n")


def _write_published(task: str, split: str, report: dict, root, bank: str = BANK_VERSION) -> Path:
    """Write the published report (already its sealed view) and its page, drawn from the JSON as
    written (its keys sorted); returns the JSON's path."""
    path = _write(report_path(task, split, root, bank), report)
    _write_text(html_path(task, split, root, bank), render_readout_html(json.loads(path.read_text())))
    return path


def write_html_reports(*, split: str = "confirm", root: str | Path | None = None,
                       bank: str = BANK_VERSION) -> list[Path]:
    """Render both tasks' pages again from their written JSON reports; returns the pages' paths."""
    out = []
    for task in TASKS:
        path = report_path(task, split, root, bank)
        if not path.is_file():
            raise DataNotFound(f"{task}: no reference report at reports/{path.name}")
        out.append(_write_text(html_path(task, split, root, bank),
                               render_readout_html(json.loads(path.read_text()))))
    return out


def write_reference_reports(*, split: str = "confirm", root: str | Path | None = None,
                            sealed_labels: Mapping[str, str | Path] | None = None,
                            min_estimable: int = MIN_ESTIMABLE_INITIALIZATIONS,
                            sealed: str | Path | None = None, bank: str = BANK_VERSION) -> list[Path]:
    """Compute and write both tasks' `reports/reference-<split>.json`; returns their paths.
    Nothing is written unless both reports could be made."""
    reports = reference_reports(split=split, root=root, sealed_labels=sealed_labels, min_estimable=min_estimable,
                                bank=bank)
    return [_publish(task, split, report, root, sealed, bank) for task, report in reports.items()]


def _publish(task: str, split: str, report: dict, root, sealed, bank: str = BANK_VERSION) -> Path:
    """Write the published form of `report` (its sealed view) and, on a sealed split, keep the
    whole report in the sealed directory."""
    if split in SEALED_SPLITS:
        _write(sealed_report_path(task, split, sealed, bank), report)
    return _write_published(task, split, sealed_view(report), root, bank)


def readjust_reference_reports(*, split: str = "confirm", root: str | Path | None = None,
                               sealed: str | Path | None = None, bank: str = BANK_VERSION) -> list[Path]:
    """Re-run the joint Holm adjustment on both tasks' written reports; returns their paths."""
    reports = {}
    for task in TASKS:
        path = report_path(task, split, root, bank)
        if not path.is_file():
            raise DataNotFound(f"{task}: no reference report at reports/{path.name}")
        reports[task] = json.loads(path.read_text())
    kept = {task: sealed_report_path(task, split, sealed, bank) for task in TASKS}
    if all(path.is_file() for path in kept.values()):  # the whole reports too, where this machine has them
        for task, report in joint_family({t: json.loads(p.read_text()) for t, p in kept.items()}).items():
            _write(kept[task], report)
    return [_write_published(task, split, sealed_view(report), root, bank)
            for task, report in joint_family(reports).items()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_reports",
                                     description="Reference rows of the readout audit on both tasks' banks.")
    parser.add_argument("--split", choices=SPLITS, default="confirm")
    parser.add_argument("--sealed-labels", action="append", default=[], metavar="TASK=FILE",
                        help="a task's sealed labels file (default: the sealed directory's); repeatable")
    parser.add_argument("--adjust-only", action="store_true",
                        help="only re-run the joint Holm adjustment on the written reports")
    parser.add_argument("--html-only", action="store_true",
                        help="only render the pages again from the written reports")
    parser.add_argument("--root", default=None, help="frozen data directory (default: the packaged one)")
    parser.add_argument("--bank", choices=BANKS, default=BANK_VERSION, help="bank version (default %(default)s)")
    args = parser.parse_args(argv)
    sealed = dict(item.split("=", 1) for item in args.sealed_labels)
    try:
        if args.html_only:
            paths = write_html_reports(split=args.split, root=args.root, bank=args.bank)
        elif args.adjust_only:
            paths = readjust_reference_reports(split=args.split, root=args.root, bank=args.bank)
        else:
            paths = write_reference_reports(split=args.split, root=args.root, sealed_labels=sealed, bank=args.bank)
    except DataNotFound as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
