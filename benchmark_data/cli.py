"""`expaudit data ...`: generate, verify, export and hash the frozen benchmark data.

Heavy imports (robosuite, pandas) happen inside the handlers, so `expaudit --help`
stays light.
"""

from __future__ import annotations

import argparse
import sys
import time


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print(f"[{stamp}] {message}", flush=True)


def _generate(args: argparse.Namespace) -> int:
    from benchmark_data.generate import ensure_stack_inputs, plan_all, plan_setting, run_cells
    from benchmark_data.registry import get_setting

    if args.all:
        cells = plan_all()
    elif args.setting:
        get_setting(args.setting)
        cells = plan_setting(args.setting)
    else:
        print("expaudit data generate: give a SETTING or --all", file=sys.stderr)
        return 2
    query_sets = sorted({c.query_set for c in cells} - {"stack-base"})
    ensure_stack_inputs(query_sets, root=args.root, log=_log)
    if args.limit is not None:
        cells = cells[: args.limit]
    ran = run_cells(cells, workers=args.workers, root=args.root, log=_log)
    _log(f"done: {ran} cells executed")
    return 0


def register(subparsers) -> None:
    """Add `data generate|verify|export|manifest` to the `expaudit` command."""
    data = subparsers.add_parser("data", help="generate, verify and export the frozen benchmark data")
    sub = data.add_subparsers(dest="data_command", metavar="ACTION")

    gen = sub.add_parser("generate", help="run the rollouts of a setting (resumable)")
    gen.add_argument("setting", nargs="?", help="setting id (see benchmark_data.registry)")
    gen.add_argument("--all", action="store_true", help="all published Replay settings, in order")
    gen.add_argument("--workers", type=int, default=2, help="simulator processes (default 2)")
    gen.add_argument("--limit", type=int, default=None, help="run at most this many planned cells")
    gen.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    gen.set_defaults(handler=_generate)
