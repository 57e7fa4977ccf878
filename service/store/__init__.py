"""The object store (a directory or S3): the system of record of submissions and the site.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "InvalidKey": "service.store.storage",
    "LocalStore": "service.store.storage",
    "ObjectNotFound": "service.store.storage",
    "ObjectStore": "service.store.storage",
    "S3Store": "service.store.storage",
    "StoreError": "service.store.storage",
    "StoreUnavailable": "service.store.storage",
    "check_key": "service.store.storage",
    "make_s3_client": "service.store.storage",
    "open_store": "service.store.storage",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.store' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
