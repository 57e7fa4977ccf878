"""`expaudit audit`: audit one rule's scores against a complete transfer matrix.

Bad input files raise the audit's `InputError`, which the command reports in
one line (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import sys

from expaudit.cli.args import non_negative_int, positive_int
from leaderboard.audit import run_audit
from leaderboard.io import read_inputs
from leaderboard.metrics import defaults
from leaderboard.site.html_report import render_report_html
from leaderboard.site.report_text import render_summary


def register(subparsers) -> None:
    """Add the `audit` subcommand to the `expaudit` parser."""
    parser = subparsers.add_parser(
        "audit",
        help="audit a selection rule against a complete transfer matrix",
        description=(
            "Audit a selection rule (its scores or its selections) against the complete "
            "outcome tensor of a library and a query set. Input files may be CSV or Parquet."
        ),
    )
    parser.add_argument(
        "--experiences",
        required=True,
        metavar="E.csv",
        help="experience_id, one row per experience in library order (first = oldest)",
    )
    parser.add_argument(
        "--outcomes",
        required=True,
        metavar="O.csv",
        help="experience_id,scene_id,seed,success (0/1), one row per cell",
    )
    parser.add_argument(
        "--scenes",
        required=True,
        metavar="S.csv",
        help="scene_id,state_id,layout_level,appearance_draw, in published order",
    )
    parser.add_argument(
        "--scores",
        required=True,
        metavar="R.csv",
        help="scene_id,experience_id,score; without score: selection-only",
    )
    parser.add_argument(
        "--shuffles",
        type=positive_int,
        default=defaults.N_SHUFFLES,
        help=f"frequency-matched shuffles (default {defaults.N_SHUFFLES})",
    )
    parser.add_argument(
        "--bootstrap",
        type=positive_int,
        default=defaults.N_BOOTSTRAP,
        help=f"cluster-bootstrap resamples over states (default {defaults.N_BOOTSTRAP})",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=defaults.SEED,
        help=f"seed of every random draw (default {defaults.SEED})",
    )
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")
    parser.add_argument("--html", metavar="PATH", help="write a self-contained HTML report here")
    parser.set_defaults(handler=run_audit_command)


def run_audit_command(args: argparse.Namespace) -> int:
    """Read, audit, write. Bad input (an `InputError`): one line on stderr and exit code 2."""
    data, submitted = read_inputs(args.experiences, args.outcomes, args.scenes, args.scores)
    report = run_audit(
        data,
        submitted.scores,
        selection_only=submitted.selection_only,
        n_shuffles=args.shuffles,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    ).to_dict()
    outputs = []
    if args.json:
        outputs.append((args.json, json.dumps(report, sort_keys=True, indent=2) + "\n"))
    if args.html:
        outputs.append((args.html, render_report_html(report)))
    for path, text in outputs:
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            sys.stderr.write(f"expaudit audit: error: {path}: cannot be written: {exc.strerror}\n")
            return 2
    if not args.json:
        sys.stdout.write(render_summary(report))
    return 0
