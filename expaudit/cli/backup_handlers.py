"""The handlers of `expaudit service backup | restore`: the store of the service's
configuration (`service.process.from_env`), copied by `service.store.backup`."""

from __future__ import annotations

import argparse

from service.process import from_env
from service.store import backup_store, open_store, restore_store


def _backup(args: argparse.Namespace) -> int:
    store = open_store(from_env())
    done = backup_store(store, args.to)
    print(f"backup: {done.objects} objects ({done.bytes} bytes) of {store.describe()} written "
          f"to {args.to}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    store = open_store(from_env())
    done = restore_store(store, args.source, force=args.force)
    print(f"restore: {done.objects} objects ({done.bytes} bytes) written to {store.describe()}; "
          "run `expaudit reconcile` to re-enqueue open submissions")
    return 0


HANDLERS = {"backup": _backup, "restore": _restore}
