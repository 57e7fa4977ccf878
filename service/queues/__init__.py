"""The jobs on RQ (audit, publish, rollout chunks), their one boundary, the reconciler and
the `expaudit worker` process.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".rollout_jobs": ("Chunk", "ROLLOUT_FUNCTION", "camera_blind"),
    ".jobs": ("ContextNotInstalled", "enqueue_publish", "install_context", "reconcile"),
    ".worker_loop": ("StopsCleanly", "work_until_stopped"),
    ".worker": ("build_context", "queues", "run_worker"),
})
