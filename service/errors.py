"""Domain errors of the service; one Flask handler turns them into JSON.

Every error body has the shape ``{"error": {"code", "message", "field"}}``
(plus ``line``/``value``/``source`` when a scores file is at fault), so a
client can point at the bad field without parsing prose.
"""

from __future__ import annotations

from expaudit.errors import ExpauditError


class ServiceError(ExpauditError):
    """An error with an HTTP status, a stable machine code and the field at fault (the HTTP
    branch of the project's exception tree: its status code says whose fault it is)."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, field: str | None = None, status: int | None = None,
                 code: str | None = None, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.extra = dict(extra or {})

    def to_dict(self) -> dict:
        body = {"code": self.code, "message": self.message, "field": self.field}
        body.update(self.extra)
        return {"error": body}


class ValidationFailed(ServiceError):
    status = 422
    code = "invalid"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class TooManyRequests(ServiceError):
    status = 429
    code = "rate_limited"


class ServiceUnavailable(ServiceError):
    status = 503
    code = "unavailable"
