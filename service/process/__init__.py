"""What every process of the service shares: its configuration, the documented defaults,
the metrics, and gunicorn's settings.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "Attempt": "service.process.redis_errors",
    "RedisUnavailable": "service.process.redis_errors",
    "redis_answers": "service.process.redis_errors",
    "tolerated": "service.process.redis_errors",
    "REDIS_ERRORS": "service.process.redis_errors",
    "TRANSIENT_REDIS_ERRORS": "service.process.redis_errors",
    "ConfigError": "service.process.config",
    "MULTIPROC_DIR_VARIABLE": "service.process.metrics",
    "Metrics": "service.process.metrics",
    "RUNNER_QUEUES": "service.process.defaults",
    "ServiceConfig": "service.process.config",
    "client_defaults": "service.process.config",
    "computed_cells_dir": "service.process.config",
    "from_env": "service.process.config",
    "parse_queues": "service.process.config",
    "protected_paths": "service.process.config",
    "redacted_url": "service.process.config",
    "serve_metrics": "service.process.metrics",
    "to_env": "service.process.config",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.process' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
