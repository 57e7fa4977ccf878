"""Shutdown handling shared by the project's RQ workers (the service worker and the runner).

RQ registers a worker in Redis before it installs its SIGTERM/SIGINT
handlers. A stop signal landing in between would kill the process with the
default action and leave the registration behind until its TTL expires, and
`service.rollout_jobs.runner_count` would then report a runner that is gone.
The mixin installs the handlers first and turns a stop requested during
start-up into an orderly one: the work loop sees it at once and deregisters.

It also remembers a stop request class-wide, so the restart loops of
`run_worker` and `run_runner` end with it instead of starting a new worker.
"""

from __future__ import annotations

from rq.exceptions import StopRequested


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
