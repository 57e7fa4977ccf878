"""`expaudit selector ...`: try a selector in the local sandbox before submitting it.

    expaudit selector demo-input IN            write a small synthetic /input tree
    expaudit selector run DIR --input IN --output OUT
    expaudit selector input SETTING IN         the /input tree a submission on SETTING gets

`run` runs the selector directory DIR exactly as the service's local
sandbox does (same limits, same checks of scores.csv) and prints the run's
result as JSON.

This module builds the parser only; the handlers (`sandbox_handlers`) load
the sandbox, so they are loaded when an action runs and `expaudit --help`
stays light. The default limits shown in the help are read from the
sandbox's `defaults` module, which loads nothing else.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import client_flags
from sandbox.defaults import CPUS, MEMORY_BYTES, MIB, PIDS, WALL_SECONDS

MEMORY_MB = MEMORY_BYTES // MIB
"""Default memory limit of a run, in MiB."""


def _run(args: argparse.Namespace) -> int:
    """Run the chosen `selector` action."""
    from expaudit.cli import sandbox_handlers  # deferred: the handlers load the sandbox

    return sandbox_handlers.HANDLERS[args.selector_command](args)


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"value '{text}' is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"value '{text}' must be positive")
        return value
    return parse


def register(subparsers) -> None:
    """Add `selector run`, `selector demo-input` and `selector input` to the `expaudit` parser."""
    parser = subparsers.add_parser("selector", help="run a selector in the local sandbox",
                                   description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="selector_command", metavar="SUBCOMMAND",
                                     required=True)
    run = commands.add_parser("run", help="run a selector directory on an /input tree",
                              description="Run DIR/selector.py in the local sandbox (needs "
                                          "root, unshare and setpriv) and check its scores.")
    run.add_argument("selector_dir", metavar="DIR", help="folder holding selector.py")
    run.add_argument("--input", required=True, metavar="IN", help="the /input tree")
    run.add_argument("--output", required=True, metavar="OUT",
                     help="empty folder that receives /output")
    run.add_argument("--wall-seconds", type=_positive(float), default=WALL_SECONDS,
                     help=f"wall-clock limit (default {WALL_SECONDS:g})")
    run.add_argument("--memory-mb", type=_positive(int), default=MEMORY_MB,
                     help=f"memory limit in MiB (default {MEMORY_MB})")
    run.add_argument("--pids", type=_positive(int), default=PIDS,
                     help=f"processes and threads (default {PIDS})")
    run.add_argument("--cpus", type=_positive(float), default=CPUS,
                     help=f"CPUs (default {CPUS:g})")
    run.set_defaults(handler=_run)
    demo = commands.add_parser("demo-input", help="write a small synthetic /input tree")
    demo.add_argument("directory", metavar="IN", help="folder to create (must be empty)")
    demo.add_argument("--experiences", type=_positive(int), default=3)
    demo.add_argument("--scenes", type=_positive(int), default=6)
    demo.set_defaults(handler=_run)
    remote = commands.add_parser(
        "input", help="download a setting's /input tree from a server",
        description="Write the exact /input tree a container submission on SETTING is given, "
                    "fetched from --server, into DIR (absent or empty): a selector tried on it "
                    "with `expaudit selector run` runs unchanged on the service.")
    remote.add_argument("setting", metavar="SETTING")
    remote.add_argument("directory", metavar="DIR")
    client_flags(remote)
    remote.set_defaults(handler=_run)
