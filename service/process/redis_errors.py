"""The one table of Redis errors: what each redis-py error means to the service.

    redis-py error                          project error        the service
    ConnectionError, TimeoutError           RedisUnreachable     retries (worker loops, `retry_on`)
    any other RedisError (a refused         RedisFailed          gives up on the call
      command, a bad reply)

Both project errors are `RedisUnavailable`; the web answers 503 to either, and
a command names the URL (never its password). Every place that talks to Redis
uses one of the three forms below instead of catching redis-py errors itself:

- `tolerated(log, message, *args)`: best effort; a failure is logged with
  `message % (*args, error name)` and the block's `.failed` tells the caller;
- `translated()`: a Redis error inside becomes the project's error;
- `redis_answers(url)`: a command's boundary, `RedisUnreachable` naming `url`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import redis as redis_lib

from expaudit.errors import Unreachable
from service.process.config import redacted_url

REDIS_ERRORS = (redis_lib.RedisError,)
"""What redis-py (and rq, through it) raises when Redis fails a call."""

TRANSIENT_REDIS_ERRORS = (redis_lib.ConnectionError, redis_lib.TimeoutError)
"""Redis errors a retry can fix: the server did not answer (restarting, unreachable)."""


class RedisUnavailable(Unreachable):
    """Redis did not answer or refused a command; the message names the URL, never a password."""

    def __init__(self, message: str, *, cause: str = "RedisError") -> None:
        super().__init__(message)
        self.cause = cause
        """The redis-py error's class name (for logs and health checks)."""


class RedisUnreachable(RedisUnavailable):
    """Redis did not answer (a connection or a timeout): a retry may succeed."""


class RedisFailed(RedisUnavailable):
    """Redis answered with an error (a refused command, a bad reply)."""


def project_error(exc: redis_lib.RedisError, where: str = "Redis") -> RedisUnavailable:
    """The project's error for a redis-py error (the table above)."""
    kind = RedisUnreachable if isinstance(exc, TRANSIENT_REDIS_ERRORS) else RedisFailed
    return kind(f"cannot use {where}: {exc}", cause=type(exc).__name__)


@dataclass
class Attempt:
    """The outcome of a best-effort block: the Redis error that ended it, if any."""

    error: redis_lib.RedisError | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


@contextlib.contextmanager
def tolerated(log: logging.Logger, message: str, *args) -> Iterator[Attempt]:
    """Run the block best effort: a Redis error ends it, is logged as a warning
    (`message % (*args, error class name)`) and is kept in the yielded `Attempt`."""
    attempt = Attempt()
    try:
        yield attempt
    except REDIS_ERRORS as exc:
        log.warning(message, *args, type(exc).__name__)
        attempt.error = exc


@contextlib.contextmanager
def translated(where: str = "Redis") -> Iterator[None]:
    """Raise the project's error (`project_error`) for a Redis error inside the block."""
    try:
        yield
    except REDIS_ERRORS as exc:
        raise project_error(exc, where) from exc


@contextlib.contextmanager
def redis_answers(url: str | None) -> Iterator[None]:
    """A command's boundary: a Redis error inside becomes `RedisUnreachable` or `RedisFailed`
    naming `url` without its password (the processes themselves retry or fail on it)."""
    where = f"Redis at {redacted_url(url)}" if url else "the embedded Redis"
    with translated(where):
        yield
