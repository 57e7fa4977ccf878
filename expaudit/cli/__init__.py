"""The single `expaudit` command: one module of this package per group of subcommands.

`audit` (the offline audit), `data` (frozen data), `service` (serve, worker,
submit and the client commands), `runner` (the rollout runner process) and
`sandbox` (run a selector locally). Each is loaded by name when the parser is
built; none of them loads the simulator or the web app at import (those load
where they are used). This package is the top layer: nothing else in the
project imports it.

Errors: a `UserError` of the project's one exception tree (bad input, an
unknown name, missing data, a server or Redis that does not answer), a
`ClientError` of the HTTP client (`expaudit_client`, installable alone) or an
`OSError` (a file of the user's surroundings) is one line on stderr and exit
status 2; anything else is a bug and keeps its traceback. Third-party errors
are turned into the tree where they happen (the HTTP client, the service
commands), so nothing is recognised here by name.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from expaudit import __version__
from expaudit.errors import UserError
from expaudit_client import ClientError

# Modules that expose `register(subparsers)`; each adds its own subcommands.
SUBCOMMAND_MODULES = (
    "expaudit.cli.audit",
    "expaudit.cli.data",
    "expaudit.cli.service",
    "expaudit.cli.sandbox",
    "expaudit.cli.runner",
    "expaudit.cli.readout",
    "expaudit.cli.backup",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="expaudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"expaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        register = getattr(importlib.import_module(module_name), "register", None)
        if register is not None:
            register(subparsers)
    return parser


USER_ERRORS = (UserError, ClientError, OSError)
"""What the command reports in one line: the user's input or surroundings, never a bug
(`ClientError`: the installable client's own base, which cannot import the tree)."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; a file, network or input error is one line on stderr and exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except USER_ERRORS as exc:
        print(f"expaudit {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
