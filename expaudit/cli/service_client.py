"""The HTTP client of the commands that talk to a server (`submit`, `status`, `selector input`
...): `--server` and `--token`, else $EXPAUDIT_SERVER and $EXPAUDIT_TOKEN; an API error
printed on one line with the field, line and value the server named."""

from __future__ import annotations

import sys

from expaudit_client import ApiError, Client


def client_for(args) -> Client:
    """The client of `args.server` with `args.token` (each else $EXPAUDIT_SERVER and
    $EXPAUDIT_TOKEN)."""
    return Client.from_env(args.server, args.token)


def api_call(function, args) -> int:
    """Run `function`; an `ApiError` (the service refused the request) is one line,
    `expaudit COMMAND: error: ...` with the field, file, line and value the server named,
    and exit status 1."""
    try:
        return function()
    except ApiError as exc:
        print(f"expaudit {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
