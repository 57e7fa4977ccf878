"""The service's name for its REST API client, which lives in the installable `expaudit_client`
package (standard library only; `pip install ./client`). Nothing here but the re-export."""

from __future__ import annotations

from expaudit_client import (ApiError, BadSelectorInput, BadServerUrl, Client, ClientError,
                             LinkInSelector, SelectorNotFound, ServerUnreachable, TargetNotEmpty,
                             UploadTooLarge, WaitTimedOut, selector_archive)

__all__ = ["ApiError", "BadSelectorInput", "BadServerUrl", "Client", "ClientError",
           "LinkInSelector", "SelectorNotFound", "ServerUnreachable", "TargetNotEmpty",
           "UploadTooLarge", "WaitTimedOut", "selector_archive"]
