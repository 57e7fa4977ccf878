"""The object store (a directory or S3): the system of record of submissions and the site.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".storage": ("InvalidKey", "LocalStore", "ObjectNotFound", "ObjectStore", "S3Store", "StoreError",
                 "StoreUnavailable", "check_key", "make_s3_client", "open_store"),
    ".computed_cells": ("FoldResult", "StoreCells", "fold_locked"),
    ".backup": ("backup_store", "restore_store"),
    ".frozen_sync": ("push_frozen", "sync_frozen"),
})
