"""What every process of the service shares: its configuration, the documented defaults,
the metrics, and gunicorn's settings.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".redis_errors": ("Attempt", "RedisUnavailable", "redis_answers", "tolerated", "REDIS_ERRORS",
                      "TRANSIENT_REDIS_ERRORS"),
    ".config": ("ConfigError", "ServiceConfig", "computed_cells_dir", "from_env",
                "parse_queues", "protected_paths", "redacted_url", "to_env"),
    ".metrics": ("MULTIPROC_DIR_VARIABLE", "Metrics", "serve_metrics"),
    ".defaults": ("RUNNER_QUEUES",),
})
