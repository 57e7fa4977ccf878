"""The handlers of `expaudit data ...`.

`export` and `manifest` only read the frozen data, so they run on the core
install. The other actions run the simulator: their handlers
(`data_sim_handlers`) are loaded when one of them runs.
"""

from __future__ import annotations

import argparse
import sys

from benchmark_data.generation.export import export_setting, write_manifest
from benchmark_data.paths import root_or_default
from benchmark_data.query_sets import QuerySetNotFoundError
from benchmark_data.registry import UnknownSettingError


def run(args: argparse.Namespace) -> int:
    """Run the `data` action `args.data_command`."""
    handler = FROZEN_DATA_HANDLERS.get(args.data_command)
    if handler is not None:
        return handler(args)
    from expaudit.cli import data_sim_handlers  # deferred: loads mujoco

    return data_sim_handlers.HANDLERS[args.data_command](args)


def export(args: argparse.Namespace) -> int:
    try:
        result = export_setting(args.setting, args.directory, root=args.root)
    except (UnknownSettingError, QuerySetNotFoundError) as exc:
        print(f"expaudit data export: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.directory}/experiences.csv, scenes.csv, outcomes.csv "
          f"({result.n_outcomes} outcomes, {result.n_missing} cells missing)")
    return 0


def manifest(args: argparse.Namespace) -> int:
    if not root_or_default(args.root).is_dir():
        print(f"expaudit data manifest: --root '{args.root}' is not a directory", file=sys.stderr)
        return 2
    path = write_manifest(args.root)
    print(f"wrote {path}")
    return 0


FROZEN_DATA_HANDLERS = {"export": export, "manifest": manifest}
"""The handlers of the `data` actions that only read the frozen data."""
