"""Prometheus metrics of one app instance (its own registry, so apps never collide).

With several gunicorn processes every process counts its own requests; a
scrape sees the process that answered it. Queue lengths are read from Redis
at scrape time, so they are the same whichever process answers.
"""

from __future__ import annotations

import logging

import redis as redis_lib
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from service import defaults

log = logging.getLogger(__name__)


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
        try:
            lengths = pipe.execute()
        except redis_lib.RedisError as exc:
            log.warning("queue lengths of %s not read: %s", ", ".join(QUEUES), type(exc).__name__)
        else:
            for name, length in zip(QUEUES, lengths):
                family.add_metric([name], float(length))
        yield family


class Metrics:
    """Request counters and latencies, submission counters, queue lengths."""

    def __init__(self, redis: redis_lib.Redis | None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("expaudit_http_requests_total", "HTTP requests",
                                ["method", "endpoint", "status"], registry=self.registry)
        self.latency = Histogram("expaudit_http_request_seconds", "HTTP request latency",
                                 ["endpoint"], registry=self.registry)
        self.submissions = Counter("expaudit_submissions_total", "Submissions accepted",
                                   ["outcome"], registry=self.registry)
        if redis is not None:
            self.registry.register(_QueueCollector(redis))
