"""`expaudit selector ...`: try a selector in the local sandbox before submitting it.

    expaudit selector demo-input IN            write a small synthetic /input tree
    expaudit selector run DIR --input IN --output OUT

`run` runs the selector directory DIR exactly as the service's local
sandbox does (same limits, same checks of scores.csv) and prints the run's
result as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from runner.sandbox import defaults
from runner.sandbox.base import Limits, RunSpec, SandboxConfigError
from runner.sandbox.demo import demo_input
from runner.sandbox.execute import run_selector
from runner.sandbox.local import LocalSandbox
from runner.sandbox.protocol import ProtocolError


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"value '{text}' is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"value '{text}' must be positive")
        return value
    return parse


def register(subparsers) -> None:
    """Add `selector run` and `selector demo-input` to the `expaudit` parser."""
    parser = subparsers.add_parser("selector", help="run a selector in the local sandbox",
                                   description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="selector_command", metavar="SUBCOMMAND",
                                     required=True)
    parser.subcommands = commands  # other parts add theirs (`expaudit selector input`)
    run = commands.add_parser("run", help="run a selector directory on an /input tree",
                              description="Run DIR/selector.py in the local sandbox (needs "
                                          "root, unshare and setpriv) and check its scores.")
    run.add_argument("selector_dir", metavar="DIR", help="folder holding selector.py")
    run.add_argument("--input", required=True, metavar="IN", help="the /input tree")
    run.add_argument("--output", required=True, metavar="OUT",
                     help="empty folder that receives /output")
    run.add_argument("--wall-seconds", type=_positive(float), default=defaults.WALL_SECONDS,
                     help=f"wall-clock limit (default {defaults.WALL_SECONDS:g})")
    memory_mb = defaults.MEMORY_BYTES // defaults.MIB
    run.add_argument("--memory-mb", type=_positive(int), default=memory_mb,
                     help=f"memory limit in MiB (default {memory_mb})")
    run.add_argument("--pids", type=_positive(int), default=defaults.PIDS,
                     help=f"processes and threads (default {defaults.PIDS})")
    run.add_argument("--cpus", type=_positive(float), default=defaults.CPUS,
                     help=f"CPUs (default {defaults.CPUS:g})")
    run.set_defaults(handler=run_command)
    demo = commands.add_parser("demo-input", help="write a small synthetic /input tree")
    demo.add_argument("directory", metavar="IN", help="folder to create (must be empty)")
    demo.add_argument("--experiences", type=_positive(int), default=3)
    demo.add_argument("--scenes", type=_positive(int), default=6)
    demo.set_defaults(handler=demo_command)


def run_command(args: argparse.Namespace) -> int:
    """Run, validate, print the result; exit 0 only when the scores are valid."""
    setting_file = Path(args.input) / "setting.json"
    try:
        setting = json.loads(setting_file.read_text())
        ids = (list(setting["experience_ids"]), list(setting["scene_ids"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"expaudit selector run: error: {setting_file}: not a readable "
                         f"setting.json ({exc})\n")
        return 2
    try:
        limits = Limits(wall_seconds=args.wall_seconds, memory_bytes=args.memory_mb * defaults.MIB,
                        pids=args.pids, cpus=args.cpus)
        spec = RunSpec(image=args.selector_dir, input_dir=Path(args.input),
                       output_dir=Path(args.output), limits=limits)
        outcome = run_selector(LocalSandbox(), spec, *ids)
    except SandboxConfigError as exc:
        sys.stderr.write(f"expaudit selector run: error: {exc}\n")
        return 2
    sys.stdout.write(json.dumps(outcome.result.to_dict(), indent=2) + "\n")
    return 0 if outcome.scores is not None else 1


def demo_command(args: argparse.Namespace) -> int:
    """Write the demo /input tree."""
    try:
        setting = demo_input(args.directory, n_experiences=args.experiences,
                             n_scenes=args.scenes)
    except (OSError, ProtocolError) as exc:
        sys.stderr.write(f"expaudit selector demo-input: error: {exc}\n")
        return 2
    sys.stdout.write(f"wrote {args.directory}: {len(setting.experience_ids)} experiences, "
                     f"{len(setting.scene_ids)} scenes\n")
    return 0
