"""The HTTP client of the commands that talk to a server (`submit`, `status`, `selector input`
...): `--server` and `--token`, else $EXPAUDIT_SERVER and $EXPAUDIT_TOKEN; an API error
printed with the field, line and value the server named."""

from __future__ import annotations

import sys

from expaudit_client import ApiError, Client


def client_for(args) -> Client:
    """The client of `args.server` with `args.token` (each else $EXPAUDIT_SERVER and
    $EXPAUDIT_TOKEN)."""
    return Client.from_env(args.server, args.token)


def api_call(function) -> int:
    """Run `function`; an `ApiError` is printed with its details and gives exit status 1."""
    try:
        return function()
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for key in ("source", "line", "value"):
            if exc.details.get(key) is not None:
                print(f"  {key}: {exc.details[key]}", file=sys.stderr)
        return 1
