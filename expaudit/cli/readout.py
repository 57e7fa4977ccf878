"""`expaudit readout audit | input | run`: the readout audit (Track B) of representations on a
bank, offline; the /input tree a readout program on a server's readout setting is given; a
readout program tried on it in the local sandbox.

This module builds the parser only; the handler (`readout_handlers`) loads the readout
engine, pandas and the page renderer when an audit runs, so `expaudit --help` stays light.
The defaults shown in the help come from the engine's constants module, which loads nothing.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import client_flags, non_negative_int, positive_int
from leaderboard.readout.defaults import MIN_ESTIMABLE_INITIALIZATIONS, N_BOOTSTRAP, SEED
from sandbox.defaults import CPUS, MEMORY_BYTES, MIB, PIDS, WALL_SECONDS


def positive_float(text: str) -> float:
    """An argparse type: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _run(args: argparse.Namespace) -> int:
    """Run the chosen `readout` action (its handler)."""
    from expaudit.cli import readout_handlers  # deferred: the handlers load the engine and pandas

    return readout_handlers.HANDLERS[args.readout_command](args)


def register(subparsers) -> None:
    """Add `readout audit`, `readout input` and `readout run` to the `expaudit` command."""
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
    run = sub.add_parser(
        "run", help="run a readout program on an /input tree in the local sandbox",
        description="Run DIR/selector.py in the local sandbox (needs root, unshare and setpriv) on a "
                    "readout /input tree (`readout input`) and check its /output features as the service "
                    "does, against the tree's observations.")
    run.add_argument("program_dir", metavar="DIR", help="folder holding selector.py")
    run.add_argument("--input", required=True, metavar="IN", help="the readout /input tree")
    run.add_argument("--output", required=True, metavar="OUT", help="empty folder that receives /output")
    run.add_argument("--wall-seconds", type=positive_float, default=WALL_SECONDS,
                     help=f"wall-clock limit (default {WALL_SECONDS:g})")
    run.add_argument("--memory-mb", type=positive_int, default=MEMORY_BYTES // MIB,
                     help=f"memory limit in MiB (default {MEMORY_BYTES // MIB})")
    run.add_argument("--pids", type=positive_int, default=PIDS, help=f"processes and threads (default {PIDS})")
    run.add_argument("--cpus", type=positive_float, default=CPUS, help=f"CPUs (default {CPUS:g})")
    run.set_defaults(handler=_run)
