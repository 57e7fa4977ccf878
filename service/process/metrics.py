"""Prometheus metrics of the web processes: request counters and latencies, accepted
submissions, queue lengths.

Each app has its own registry, so apps built in one process (the tests) never collide.
With several gunicorn processes, a scrape must not see only the process that answered
it (six scrapes of one counter read 2, 1, 1, 2, 2, 1: resets to Prometheus). So when
the Prometheus client runs in its multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`, the
client library's own variable, set before the process starts: `expaudit serve` and the
container's `web` role set it to a directory emptied at their start), every process
writes its counts to files there and a scrape adds up the files of all processes, live
and exited (`scrape_registry`); gunicorn's `child_exit` hook
(`service.process.gunicorn_conf`) marks an exited worker dead. Without the variable a scrape
reads the answering process's own registry (one process, or the tests).

Queue lengths are read from Redis at scrape time, so they are the same whichever
process answers.
"""

from __future__ import annotations

import logging
import os

import redis as redis_lib
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from service.process import defaults
from service.process.redis_errors import tolerated

log = logging.getLogger(__name__)

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
"""The Prometheus client's variable: the directory of its multiprocess mode's files."""


def multiprocess_dir() -> str | None:
    """The directory the Prometheus client of this process writes its counts to, or None
    when it keeps them in memory. The client chooses when it is imported, from
    `PROMETHEUS_MULTIPROC_DIR`; a variable set later changes nothing, and is ignored."""
    path = os.environ.get(MULTIPROC_DIR_VARIABLE)
    if not path:
        return None
    if values.ValueClass is values.MutexValue:
        log.warning("%s was set after the Prometheus client was loaded: this process's "
                    "metrics are its own", MULTIPROC_DIR_VARIABLE)
        return None
    return path


def scrape_registry(path: str, redis: redis_lib.Redis | None) -> CollectorRegistry:
    """A registry that adds up the counts every process wrote under `path` (the
    multiprocess mode's files), with the queue lengths read from `redis`."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    if redis is not None:
        registry.register(_QueueCollector(redis))
    return registry


QUEUES = (defaults.AUDIT_QUEUE, defaults.PUBLISH_QUEUE, defaults.SELECTOR_QUEUE,
          defaults.ROLLOUT_QUEUE)
"""Every RQ queue of the service: audits, leaderboard rebuilds, container audits and
rollout chunks (the last two served by runners)."""


class _QueueCollector:
    """Reports the length of each RQ queue (`QUEUES`) when scraped, in one Redis round trip."""

    def __init__(self, redis: redis_lib.Redis) -> None:
        self.redis = redis

    def collect(self):
        family = GaugeMetricFamily("expaudit_queue_length", "Jobs waiting per RQ queue",
                                   labels=["queue"])
        pipe = self.redis.pipeline(transaction=False)
        for name in QUEUES:
            pipe.llen(f"rq:queue:{name}")
        with tolerated(log, "queue lengths of %s not read: %s", ", ".join(QUEUES)) as attempt:
            lengths = pipe.execute()
        if not attempt.failed:
            for name, length in zip(QUEUES, lengths):
                family.add_metric([name], float(length))
        yield family


class Metrics:
    """Request counters and latencies, submission counters, queue lengths."""

    def __init__(self, redis: redis_lib.Redis | None) -> None:
        self.redis = redis
        self.multiprocess_dir = multiprocess_dir()
        self.registry = CollectorRegistry()
        self.requests = Counter("expaudit_http_requests_total", "HTTP requests",
                                ["method", "endpoint", "status"], registry=self.registry)
        self.latency = Histogram("expaudit_http_request_seconds", "HTTP request latency",
                                 ["endpoint"], registry=self.registry)
        self.submissions = Counter("expaudit_submissions_total", "Submissions accepted",
                                   ["outcome"], registry=self.registry)
        if redis is not None:
            self.registry.register(_QueueCollector(redis))

    def render(self) -> bytes:
        """The Prometheus text of a scrape: every process's counts in multiprocess mode,
        else this process's."""
        if self.multiprocess_dir is not None:
            return generate_latest(scrape_registry(self.multiprocess_dir, self.redis))
        return generate_latest(self.registry)


def serve_metrics(host: str, port: int, path: str, redis: redis_lib.Redis | None):
    """Answer scrapes on `host:port` from a thread of this process: every web process's
    counts under `path` and the queue lengths (the one exporter of `expaudit serve
    --metrics-port`, off the public port). Returns the server; `shutdown()` stops it."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, host, registry=scrape_registry(path, redis))
    return server
