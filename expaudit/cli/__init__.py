"""The single `expaudit` command: one module of this package per group of subcommands.

`audit` (the offline audit), `data` (frozen data), `service` (serve, worker,
submit and the client commands), `runner` (the rollout runner process) and
`sandbox` (run a selector locally). Each is loaded by name when the parser is
built and imports its heavy dependencies inside the handlers, so `expaudit
audit` never loads the simulator or the web stack. This package is the top
layer: nothing else in the project imports it.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from expaudit import __version__

# Modules that expose `register(subparsers)`; each adds its own subcommands.
SUBCOMMAND_MODULES = (
    "expaudit.cli.audit",
    "expaudit.cli.data",
    "expaudit.cli.service",
    "expaudit.cli.sandbox",
    "expaudit.cli.runner",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="expaudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"expaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = []
    for module_name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # that part has no commands yet
            raise
        modules.append(module)
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    for module in modules:  # then each part may add subcommands to another part's command
        extend = getattr(module, "extend", None)
        if extend is not None:
            extend(subparsers)
    return parser


USER_ERRORS = (
    ("leaderboard.errors", "InputError"),
    ("service.settings", "SettingsError"),
    ("requests", "RequestException"),
    ("redis.exceptions", "RedisError"),
)
"""Errors that come from the user's input or surroundings (besides OSError), by module and name.

Looked up only among modules already imported, so the boundary loads nothing."""


def _user_error_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [OSError]
    for module_name, name in USER_ERRORS:
        module = sys.modules.get(module_name)
        if module is not None:
            types.append(getattr(module, name))
    return tuple(types)


def _one_line(exc: BaseException) -> str:
    requests = sys.modules.get("requests")
    if (requests is not None and isinstance(exc, (requests.ConnectionError, requests.Timeout))
            and exc.request is not None):
        return f"cannot reach {exc.request.url}: is the server running and --server right?"
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
    except Exception as exc:
        if not isinstance(exc, _user_error_types()):
            raise
        print(f"expaudit {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
