"""The settings the service serves: their frozen data, downloads and a selector's /input.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "BenchmarkCatalog": "service.catalog.catalog",
    "Catalog": "service.catalog.catalog",
    "DataUnavailable": "service.catalog.catalog",
    "SelectorsUnsupported": "service.catalog.catalog",
    "StaticCatalog": "service.catalog.catalog",
    "UnknownSetting": "service.catalog.catalog",
    "export_setting": "service.catalog.catalog",
    "fingerprint": "service.catalog.catalog",
    "open_catalog": "service.catalog.catalog",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.catalog' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
