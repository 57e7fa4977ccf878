"""Container submissions: the archive or image checked at upload, and the selector run of
an audit job in the sandbox.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "SelectorFailed": "service.selectors.run",
    "make_sandbox": "service.selectors.run",
    "run_container": "service.selectors.run",
    "selector_limits": "service.selectors.run",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.selectors' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
