"""Argument types shared by every `expaudit` subcommand: argparse names the flag in their errors."""

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
