"""The single `expaudit` command; each part of the project registers its subcommands.

Subcommand modules import their heavy dependencies inside the handlers, so
`expaudit audit` never loads the simulator or the web stack.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from expaudit import __version__

# Modules that expose `register(subparsers)`; each adds its own subcommands.
SUBCOMMAND_MODULES = (
    "leaderboard.cli",
    "benchmark_data.cli",
    "service.cli",
    "runner.cli",
    "runner.sandbox.cli",
    "runner.runner_cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="expaudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"expaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # that part has no commands yet
            raise
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    return int(handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
