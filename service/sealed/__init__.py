"""Sealed settings: the daily quota, the Ladder and the headline-only reports.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "audit_sealed": "service.sealed.report",
    "give_back_sealed_quota": "service.sealed.quota",
    "sealed_settings": "service.sealed.quota",
    "take_sealed_quota": "service.sealed.quota",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.sealed' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
