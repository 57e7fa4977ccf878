"""`expaudit audit`: audit one rule's scores against a complete transfer matrix.

Bad input files raise the audit's `InputError`, which the command reports in
one line (exit status 2).

This module builds the parser only; the handler (`audit_handlers`) loads the
audit engine and pandas, so it is loaded when an audit runs and
`expaudit --help` stays light. The defaults shown in the help are read from
the metrics' constants module, which loads nothing else.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import non_negative_int, positive_int
from leaderboard.metrics.defaults import N_BOOTSTRAP, N_SHUFFLES, SEED


def run_audit_command(args: argparse.Namespace) -> int:
    """Read, audit, write (the handler)."""
    from expaudit.cli import audit_handlers  # deferred: the handler loads the engine and pandas

    return audit_handlers.run_audit_command(args)


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
        default=N_SHUFFLES,
        help=f"frequency-matched shuffles (default {N_SHUFFLES})",
    )
    parser.add_argument(
        "--bootstrap",
        type=positive_int,
        default=N_BOOTSTRAP,
        help=f"cluster-bootstrap resamples over states (default {N_BOOTSTRAP})",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=SEED,
        help=f"seed of every random draw (default {SEED})",
    )
    parser.add_argument("--json", metavar="PATH", help="write the JSON report here")
    parser.add_argument("--html", metavar="PATH", help="write a self-contained HTML report here")
    parser.set_defaults(handler=run_audit_command)
