"""`expaudit serve`: the whole service in one command (Redis, the web and worker processes).

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "serve": "service.serve.embedded",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
