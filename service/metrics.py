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


class _QueueCollector:
    """Reports the length of each RQ queue when scraped."""

    def __init__(self, redis: redis_lib.Redis) -> None:
        self.redis = redis

    def collect(self):
        family = GaugeMetricFamily("expaudit_queue_length", "Jobs waiting per RQ queue",
                                   labels=["queue"])
        for name in (defaults.AUDIT_QUEUE, defaults.PUBLISH_QUEUE):
            try:
                family.add_metric([name], float(self.redis.llen(f"rq:queue:{name}")))
            except redis_lib.RedisError as exc:
                log.warning("queue length of %s not read: %s", name, type(exc).__name__)
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
