"""A clock that moves only when a test says so, for code that reads `time.time()` and `time.monotonic()`."""

from __future__ import annotations


class ManualClock:
    """Stands in for the `time` module inside a service module (e.g. `service.auth.tokens`)."""

    def __init__(self, now: float = 1_000_020.0) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
