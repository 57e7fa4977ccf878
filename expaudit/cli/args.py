"""Arguments shared by the `expaudit` subcommands: types whose errors argparse names by flag,
and the flags of every command that talks to a server."""

from __future__ import annotations

import argparse


def int_at_least(minimum: int, what: str):
    """An argparse type: an integer >= `minimum`, named `what` in the error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {value}")
        return value
    return parse


positive_int = int_at_least(1, "positive")
non_negative_int = int_at_least(0, "non-negative")


def client_flags(parser: argparse.ArgumentParser) -> None:
    """`--server` and `--token` of a command that talks to the service over HTTP."""
    parser.add_argument("--server", help="service URL ($EXPAUDIT_SERVER)")
    parser.add_argument("--token", help="bearer token ($EXPAUDIT_TOKEN)")
