"""The client's errors: one base, `ClientError`, so that the client installs alone.

    ClientError                  a request the caller can correct, or a server not answering
    ├── ApiError                 the server answered 400 or more (code, message, field)
    ├── ServerUnreachable        refused, timed out or cut off (also a ConnectionError)
    ├── BadServerUrl             a server address that is no http(s) URL (also a ValueError)
    ├── UploadTooLarge           a file over the server's upload limit, found before sending
    ├── DownloadNotOffered       a download the setting does not offer (also a LookupError)
    ├── LinkInSelector           a selector directory holding a symbolic link
    ├── SelectorNotFound         neither a directory, a .tar.gz nor an image@sha256:...
    ├── TargetNotEmpty           the /input target exists and is not empty
    ├── BadSelectorInput         an /input archive that unpacks too large or outside input/,
    │                            or an /input tree without a readable setting.json
    ├── BadScoresFile            a scores file that breaks the format, found before sending
    └── WaitTimedOut             a submission that did not change for the whole wait

The `expaudit` command reports every `ClientError` as one line, like the project's
`UserError`s (expaudit.cli).
"""

from __future__ import annotations

__all__ = ["ApiError", "BadScoresFile", "BadSelectorInput", "BadServerUrl", "ClientError", "DownloadNotOffered",
           "LinkInSelector",
           "SelectorNotFound", "ServerUnreachable", "TargetNotEmpty", "UploadTooLarge",
           "WaitTimedOut"]


class ClientError(Exception):
    """Base of every error the client raises on purpose; the message says what to change."""


class ApiError(ClientError):
    """A non-2xx answer, with the API's error code, message, field and details (the file,
    line and value a scores error names)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 details: dict | None = None, retry_after: float | None = None) -> None:
        self.status, self.code, self.message, self.field = status, code, message, field
        self.details = dict(details or {})
        self.retry_after = retry_after
        where = f" (field '{field}')" if field else ""
        named = "".join(f"; {key}: {self.details[key]}" for key in ("source", "line", "value")
                        if self.details.get(key) is not None)
        super().__init__(f"HTTP {status} {code}: {message}{where}{named}")


class ServerUnreachable(ClientError, ConnectionError):
    """The server did not answer: refused, timed out or cut off mid-answer."""


class BadServerUrl(ClientError, ValueError):
    """The server's address is not an http(s) URL with a host."""


class UploadTooLarge(ClientError, ValueError):
    """A file larger than the server's upload limit, refused before a byte is sent."""


class DownloadNotOffered(ClientError, LookupError):
    """A download key the setting's document does not list."""


class LinkInSelector(ClientError, ValueError):
    """A selector directory holds a symbolic link, which is not sent."""


class SelectorNotFound(ClientError, FileNotFoundError):
    """A selector to submit that is neither a directory, a file nor a pinned image reference."""


class TargetNotEmpty(ClientError, FileExistsError):
    """The directory to unpack a selector input into exists and is not empty."""


class BadSelectorInput(ClientError, ValueError):
    """A selector input archive from the server that unpacks too large or outside `input/`, or
    an /input tree whose setting.json cannot be read."""


class BadScoresFile(ClientError, ValueError):
    """A scores file that breaks the format (file, line, field and value named), refused
    before a byte is sent."""


class WaitTimedOut(ClientError, TimeoutError):
    """A submission's status did not change for the whole wait."""
