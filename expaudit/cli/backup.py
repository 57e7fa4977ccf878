"""`expaudit service backup --to FILE`, `expaudit service restore --from FILE` and
`expaudit service push-frozen`.

Copy every object of the service's store (`EXPAUDIT_STORE`, with its S3 settings) into one
file with a SHA-256 manifest, and back into a fresh store (`service.store.backup`). The store
is the service's system of record: after a restore, `expaudit reconcile` (or any worker at
start) re-enqueues what was in flight. Details: docs/self_hosting.md ("Backup and restore").
`push-frozen` uploads the published frozen data to the store, from which runners on other
hosts sync theirs (`expaudit runner --sync-frozen`; `service.store.frozen_sync`).

This module builds the parser only; `backup_handlers` loads the store (boto3) when a command
runs.
"""

from __future__ import annotations

import argparse


def _run(args: argparse.Namespace) -> int:
    from expaudit.cli import backup_handlers  # deferred: the store loads boto3

    return backup_handlers.HANDLERS[args.store_command](args)


def register(subparsers) -> None:
    """Add `expaudit service backup | restore` to the `expaudit` parser."""
    service = subparsers.add_parser("service", help="back up or restore the service's store")
    commands = service.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    backup = commands.add_parser("backup", help="copy every object of the store ($EXPAUDIT_STORE) "
                                                "into one file with a sha256 manifest")
    backup.add_argument("--to", required=True, metavar="FILE", help="backup file to write")
    backup.set_defaults(handler=_run)
    restore = commands.add_parser("restore", help="copy a backup's objects into the store "
                                                  "($EXPAUDIT_STORE), every object checked first")
    restore.add_argument("--from", required=True, metavar="FILE", dest="source",
                         help="backup file to read")
    restore.add_argument("--force", action="store_true",
                         help="restore into a store that already holds objects (same keys are "
                              "overwritten)")
    restore.set_defaults(handler=_run)
    push = commands.add_parser("push-frozen", help="upload the published frozen data (every file "
                                                   "of its manifest.json) to the store")
    push.add_argument("--frozen-root", help="frozen data directory (default "
                                            "$EXPAUDIT_FROZEN_ROOT, else the packaged data)")
    push.set_defaults(handler=_run)
