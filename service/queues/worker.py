"""The worker process: connections, the reconciler, and an RQ worker loop.

`run_worker` installs the job context once, reconciles the store against
the queues, then works on the queues of `config.worker_queues` (publish
and audit; `selectors` too where the worker should run container
submissions itself, as in `expaudit serve`). The RQ worker returns when it has been idle for
`RECONCILE_INTERVAL_S` (the loop reconciles again) or when Redis dropped
the connection (the loop waits and reconnects); only a shutdown signal ends
the loop.
"""

from __future__ import annotations

import logging

import redis as redis_lib
from rq import Queue, Worker

from service.process import ConfigError, ServiceConfig, TRANSIENT_REDIS_ERRORS, defaults, redacted_url
from service.catalog import open_catalog
from service.selectors import make_sandbox, selector_limits
from service.queues.jobs import JobContext, install_context, reconcile
from service.submissions import AuditOptions
from service.store import StoreError, open_store
from service.queues.worker_loop import StopsCleanly, work_until_stopped

log = logging.getLogger(__name__)


class ServiceWorker(StopsCleanly, Worker):
    """An RQ worker that stops cleanly (`service.queues.worker_loop`) and gives each forked
    work horse connections of its own.

    The horse is a fork of the worker: sharing the parent's pooled HTTP
    connections to the object store would let a horse killed mid-response
    leave a half-read socket behind for the parent.
    """

    config: ServiceConfig | None = None

    def main_work_horse(self, job, queue):
        if self.config is not None:
            install_context(build_context(self.config))
        return super().main_work_horse(job, queue)


def connect_redis(url: str) -> redis_lib.Redis:
    try:
        return redis_lib.Redis.from_url(url, socket_connect_timeout=3, health_check_interval=10)
    except ValueError as exc:  # not a redis:// URL
        raise ConfigError(f"EXPAUDIT_REDIS_URL / --redis-url '{redacted_url(url)}': "
                            f"{exc}") from None


def build_context(config: ServiceConfig, *, sandbox: bool | None = None) -> JobContext:
    """The connections of one process's jobs.

    `sandbox`: build the selector sandbox of `config.sandbox` (the runner
    passes True); None builds it only when this worker serves the `selectors`
    queue, so a worker without the Docker socket never looks for an engine.
    The local sandbox claims this process's worker directory, and first stops
    the sandboxes and removes the run trees of workers that died
    (`sandbox.workdir`).
    """
    if not config.redis_url:
        raise ConfigError("no Redis: set EXPAUDIT_REDIS_URL or pass --redis-url")
    if sandbox is None:
        sandbox = defaults.SELECTOR_QUEUE in config.worker_queues
    return JobContext(store=open_store(config), redis=connect_redis(config.redis_url),
                      catalog=open_catalog(config),
                      options=AuditOptions(config.n_shuffles, config.n_bootstrap),
                      sandbox=make_sandbox(config) if sandbox else None,
                      selector_limits=selector_limits(config))


def queues(redis: redis_lib.Redis,
           names: tuple[str, ...] = defaults.WORKER_QUEUES) -> list[Queue]:
    """The RQ queues of `names`, publish first: a finished audit should reach the
    leaderboard before the next starts. `selectors` only when asked for (the
    container audits belong to the runner, which holds the sandbox)."""
    return [Queue(name, connection=redis) for name in defaults.WORKER_QUEUE_CHOICES
            if name in names]


def run_worker(config: ServiceConfig, *, burst: bool = False,
               idle_s: int = defaults.RECONCILE_INTERVAL_S) -> None:
    """Reconcile and work until a shutdown signal (or, with `burst`, until the queues are empty)."""
    context = build_context(config)
    install_context(context)

    def work_once() -> None:
        result = reconcile(context.store, context.redis)
        if result.enqueued:
            log.info("reconciler re-enqueued %d of %d open submissions", len(result.enqueued),
                     result.open)
        worker = ServiceWorker(queues(context.redis, config.worker_queues),
                               connection=context.redis)
        worker.config = config
        worker.work(burst=burst, max_idle_time=None if burst else idle_s, with_scheduler=not burst,
                    logging_level="INFO")

    work_until_stopped(ServiceWorker, work_once, burst=burst, role="worker",
                       retry_on=(*TRANSIENT_REDIS_ERRORS, StoreError))
