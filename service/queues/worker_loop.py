"""How the project's RQ workers (the service worker and the runner) stop and restart.

Stopping: RQ registers a worker in Redis before it installs its SIGTERM and
SIGINT handlers. A stop signal landing in between would kill the process
with the default action and leave the registration behind until its TTL
expires, and `service.queues.rollout_jobs.runner_count` would then report a runner
that is gone. `StopsCleanly` installs the handlers first and turns a stop
requested during start-up into an orderly one: the work loop sees it at
once and deregisters. It also remembers a stop request class-wide, so that
`work_until_stopped` ends with it instead of starting a new worker.

Restarting: an RQ worker returns when it has been idle long enough (the
service worker reconciles, then works again) or when Redis dropped it;
`work_until_stopped` starts the next one, backing off while a dependency is
unreachable.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Callable

from rq.exceptions import StopRequested

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 15.0
"""Longest wait between two attempts while a dependency is unreachable."""
SCHEDULER_STOP_GRACE_S = 10.0
"""How long a stopping worker waits for its scheduler process before killing it."""


class StopsCleanly:
    """Mixin for an `rq.Worker` subclass (put it first among the bases)."""

    shutdown_requested = False

    def handle_warm_shutdown_request(self):
        type(self).shutdown_requested = True
        super().handle_warm_shutdown_request()

    def bootstrap(self, *args, **kwargs):
        self._install_signal_handlers()
        try:
            super().bootstrap(*args, **kwargs)
        except StopRequested:
            self._stop_requested = True  # the work loop's first check ends it, with teardown

    def _start_scheduler(self, *args, **kwargs):
        try:
            super()._start_scheduler(*args, **kwargs)
        except StopRequested:
            self._stop_requested = True

    def stop_scheduler(self):
        """Stop the scheduler process, never hanging on it.

        RQ sends it SIGTERM and waits. A scheduler forked just before the stop can
        get the signal before it installs its own handler: it then runs the
        handler it inherited from the worker, keeps scheduling, and the wait never
        ends. Here the wait lasts `SCHEDULER_STOP_GRACE_S`; a scheduler still
        alive then is killed (its locks expire with their TTL).
        """
        process = getattr(getattr(self, "scheduler", None), "_process", None)
        if not (process and process.pid):
            return
        try:
            os.kill(process.pid, signal.SIGTERM)
        except OSError:
            pass
        process.join(SCHEDULER_STOP_GRACE_S)
        if process.is_alive():
            log.warning("scheduler process %s missed its stop signal; killing it", process.pid)
            process.kill()
            process.join()


def work_until_stopped(worker_class: type[StopsCleanly], work_once: Callable[[], None], *,
                       burst: bool, retry_on: tuple[type[BaseException], ...], role: str) -> None:
    """Call `work_once` (build one `worker_class` worker and let it work) until a stop signal.

    A worker that returns at once (Redis dropped it) or an error of
    `retry_on` (a dependency not reachable yet) is followed by a doubling
    wait, up to `MAX_BACKOFF_S`, instead of a spin. With `burst` (batch use),
    one call, and an error of `retry_on` is raised instead of waited out.
    `role` names the process in the log ("worker", "runner").
    """
    backoff = 1.0
    while not worker_class.shutdown_requested:
        started = time.monotonic()
        try:
            work_once()
            if burst:
                return
            failed = time.monotonic() - started < 1.0
        except retry_on as exc:
            if burst:
                raise
            log.warning("%s waiting for its dependencies (%s: %s); retry in %.0f s",
                        role, type(exc).__name__, exc, backoff)
            failed = True
        if failed and not worker_class.shutdown_requested:
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
        else:
            backoff = 1.0
