"""expaudit-client: submit to an expaudit service and fetch its data, on the standard library.

    from expaudit_client import Client
    client = Client.from_env()            # $EXPAUDIT_SERVER, $EXPAUDIT_TOKEN
    status = client.submit("scores.csv", ["stack-replay-k10-a"], name="my rule")
    final = client.wait(status["id"])

It installs alone (`pip install ./client`, Python 3.11-3.13, no dependencies) with its
own command, `expaudit-client` (`expaudit_client.cli`), and imports nothing of the
service; the full package's `expaudit` command uses it too.
"""

from __future__ import annotations

from expaudit_client.errors import (ApiError, BadScoresFile, BadSelectorInput, BadServerUrl, ClientError,
                                    DownloadNotOffered, LinkInSelector, SelectorNotFound, ServerUnreachable,
                                    TargetNotEmpty, UploadTooLarge, WaitTimedOut)
from expaudit_client.http import DEFAULT_SERVER, FINAL_STATES, Client, server_url
from expaudit_client.local_run import LocalRun, run_locally
from expaudit_client.scores_file import ScoresSummary, SettingIds, check_scores_file
from expaudit_client.selector_files import selector_archive, unpack_input

__version__ = "0.1.0"

__all__ = ["ApiError", "BadScoresFile", "BadSelectorInput", "BadServerUrl", "Client", "ClientError",
           "DEFAULT_SERVER", "DownloadNotOffered", "FINAL_STATES", "LinkInSelector", "SelectorNotFound",
           "ServerUnreachable", "TargetNotEmpty", "UploadTooLarge", "WaitTimedOut",
           "LocalRun", "ScoresSummary", "SettingIds", "check_scores_file", "run_locally",
           "selector_archive", "server_url", "unpack_input"]
