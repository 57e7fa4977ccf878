"""The handlers of `expaudit service backup | restore | push-frozen`: the store of the
service's configuration (`service.process.from_env`), copied by `service.store.backup`, or
given the frozen data by `service.store.frozen_sync`."""

from __future__ import annotations

import argparse

from benchmark_data.paths import root_or_default
from service.process import from_env
from service.store import backup_store, open_store, push_frozen, restore_store


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


def _push_frozen(args: argparse.Namespace) -> int:
    config = from_env()
    root = root_or_default(args.frozen_root or config.frozen_root)
    store = open_store(config)
    done = push_frozen(store, root)
    print(f"push-frozen: {done.files} files of {root} in {store.describe()} "
          f"({done.written} uploaded, the others were there)")
    return 0


HANDLERS = {"backup": _backup, "restore": _restore, "push-frozen": _push_frozen}
