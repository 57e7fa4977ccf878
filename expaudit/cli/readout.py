"""`expaudit readout audit | input`: the readout audit (Track B) of representations on a bank,
offline, and the /input tree a readout program on a server's readout setting is given.

This module builds the parser only; the handler (`readout_handlers`) loads the readout
engine, pandas and the page renderer when an audit runs, so `expaudit --help` stays light.
The defaults shown in the help come from the engine's constants module, which loads nothing.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import client_flags, non_negative_int, positive_int
from leaderboard.readout.defaults import MIN_ESTIMABLE_INITIALIZATIONS, N_BOOTSTRAP, SEED


def _run(args: argparse.Namespace) -> int:
    """Run the chosen `readout` action (its handler)."""
    from expaudit.cli import readout_handlers  # deferred: the handlers load the engine and pandas

    return readout_handlers.HANDLERS[args.readout_command](args)


def register(subparsers) -> None:
    """Add `readout audit` and `readout input` to the `expaudit` command."""
    readout = subparsers.add_parser("readout", help="the readout audit (Track B): accuracy, responsiveness, "
                                                    "context stability of a representation's readout")
    sub = readout.add_subparsers(dest="readout_command", metavar="ACTION", required=True)
    audit = sub.add_parser(
        "audit",
        help="audit representations' readouts on an observation bank",
        description=(
            "Fit the spec's ridge readout on each representation's features (or take its predictions), "
            "measure every metric per initialization of the split, summarise with initialization-bootstrap "
            "intervals, run the primary sign tests (Holm over the report) and, when the bank has policy "
            "outcomes, the failure predictors. See docs/readout.md."
        ),
    )
    audit.add_argument("--bank", required=True, metavar="DIR",
                       help="bank directory: bank.json, observations.parquet, labels.parquet[, outcomes.parquet]")
    audit.add_argument("--sealed-labels", metavar="FILE",
                       help="the sealed labels of confirm and eval (without it only dev can be audited)")
    audit.add_argument("--features", action="append", default=[], metavar="[NAME=]PATH",
                       help="features: Parquet (observation_id, f0..fN), NPZ (observation_id, features) or a "
                            "directory of features-*.npz shards; repeatable")
    audit.add_argument("--predictions", action="append", default=[], metavar="[NAME=]PATH",
                       help="predictions: Parquet or CSV (observation_id, prediction) or NPZ; repeatable")
    audit.add_argument("--split", choices=["confirm", "dev", "eval"], default=None,
                       help="initializations audited (default: confirm with --sealed-labels, else dev)")
    audit.add_argument("--bootstrap", type=positive_int, default=N_BOOTSTRAP,
                       help=f"initialization-bootstrap resamples (default {N_BOOTSTRAP})")
    audit.add_argument("--seed", type=non_negative_int, default=SEED,
                       help=f"seed of every random draw (default {SEED})")
    audit.add_argument("--min-estimable", type=non_negative_int, default=MIN_ESTIMABLE_INITIALIZATIONS,
                       help="run the primary tests only when this many initializations have an estimable gain "
                            f"(the protocol's gate, default {MIN_ESTIMABLE_INITIALIZATIONS})")
    audit.add_argument("--json", metavar="PATH", help="write the JSON report here")
    audit.add_argument("--html", metavar="PATH", help="write a self-contained HTML report here")
    audit.set_defaults(handler=_run)
    remote = sub.add_parser(
        "input", help="download a readout setting's /input tree from a server",
        description="Write the exact /input tree a program submitted on the readout SETTING is given "
                    "(observation images of train, dev and confirm, the public labels of train and dev), "
                    "fetched from --server, into DIR (absent or empty): a program tried on it runs "
                    "unchanged on the service. See docs/readout.md.")
    remote.add_argument("setting", metavar="SETTING")
    remote.add_argument("directory", metavar="DIR")
    client_flags(remote)
    remote.set_defaults(handler=_run)
