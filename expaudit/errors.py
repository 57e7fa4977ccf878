"""The one exception tree of the project: every error raised on purpose has a base here.

    ExpauditError                     raised on purpose by the project's code
    ├── UserError                     the caller's input or surroundings: one line, exit status 2
    │   ├── InvalidInput              a file, field or value that breaks a documented format
    │   ├── UnknownName               a setting, rule or other name that is not declared
    │   ├── DataNotFound              frozen data, a policy or a report not present here
    │   └── Unreachable               a server or Redis the command was pointed at, not answering
    ├── InternalError                 the project's own machinery failed: retried or reported
    ├── service.errors.ServiceError   an HTTP answer with its status code (the web process)
    └── sandbox.base.SandboxError     a sandbox run: each subclass a UserError or InternalError

Packages subclass these where they raise (`leaderboard.errors.InputError` is an `InvalidInput`),
also the built-in errors callers catch (`KeyError`); nothing is caught by name.
"""
from __future__ import annotations

__all__ = ["DataNotFound", "ExpauditError", "InternalError", "InvalidInput", "UnknownName",
           "Unreachable", "UserError"]


class ExpauditError(Exception):
    """Base of every error the project raises on purpose."""


class UserError(ExpauditError):
    """The caller's input or surroundings are wrong; the message says what to change."""


class InvalidInput(UserError):
    """A file, field or value that breaks a documented format."""


class UnknownName(UserError):
    """A setting, rule or other name that is not declared."""


class DataNotFound(UserError):
    """Frozen data, a policy or a stored report that is not present where it was looked for."""


class Unreachable(UserError):
    """A server or Redis the command was pointed at that does not answer (the service's own
    object store failing is an `InternalError`: never the user's to fix)."""


class InternalError(ExpauditError):
    """The project's own machinery failed; the work is retried or reported, not charged."""
