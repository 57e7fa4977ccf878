"""expaudit-client: submit to an expaudit service and fetch its data, on the standard library.

    from expaudit_client import Client
    client = Client.from_env()            # $EXPAUDIT_SERVER, $EXPAUDIT_TOKEN
    status = client.submit("scores.csv", ["stack-replay-k10-a"], name="my rule")
    final = client.wait(status["id"])

It installs alone (`pip install ./client`, Python 3.11-3.13, no dependencies) and
imports nothing of the service; the `expaudit` command uses it too.
"""

from __future__ import annotations

from expaudit_client.errors import (ApiError, BadSelectorInput, BadServerUrl, ClientError,
                                    DownloadNotOffered, LinkInSelector, SelectorNotFound, ServerUnreachable,
                                    TargetNotEmpty, UploadTooLarge, WaitTimedOut)
from expaudit_client.http import DEFAULT_SERVER, FINAL_STATES, Client, server_url
from expaudit_client.selector_files import selector_archive, unpack_input

__version__ = "0.1.0"

__all__ = ["ApiError", "BadSelectorInput", "BadServerUrl", "Client", "ClientError",
           "DEFAULT_SERVER", "DownloadNotOffered", "FINAL_STATES", "LinkInSelector", "SelectorNotFound",
           "ServerUnreachable", "TargetNotEmpty", "UploadTooLarge", "WaitTimedOut",
           "selector_archive", "server_url", "unpack_input"]
