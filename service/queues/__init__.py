"""The jobs on RQ (audit, publish, rollout chunks), their one boundary, the reconciler and
the `expaudit worker` process.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "Chunk": "service.queues.rollout_jobs",
    "ContextNotInstalled": "service.queues.jobs",
    "StopsCleanly": "service.queues.worker_loop",
    "build_context": "service.queues.worker",
    "camera_blind": "service.queues.rollout_jobs",
    "enqueue_publish": "service.queues.jobs",
    "install_context": "service.queues.jobs",
    "queues": "service.queues.worker",
    "reconcile": "service.queues.jobs",
    "run_worker": "service.queues.worker",
    "work_until_stopped": "service.queues.worker_loop",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.queues' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
