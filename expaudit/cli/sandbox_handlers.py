"""The handlers of `expaudit selector run | demo-input | input`: run a selector in the local
sandbox, write a demo /input tree, download a setting's /input tree from a server.

They load the sandbox, so the command's parser (`sandbox`) loads this module
only when one of them runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from expaudit.cli.service_client import api_call, client_for
from expaudit.errors import UserError
from sandbox import defaults
from sandbox.base import Limits, RunSpec, SandboxConfigError
from sandbox.demo import demo_input
from sandbox.execute import run_selector
from sandbox.local import LocalSandbox


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
    except (OSError, UserError) as exc:
        sys.stderr.write(f"expaudit selector demo-input: error: {exc}\n")
        return 2
    sys.stdout.write(f"wrote {args.directory}: {len(setting.experience_ids)} experiences, "
                     f"{len(setting.scene_ids)} scenes\n")
    return 0


def input_command(args: argparse.Namespace) -> int:
    """Download the /input tree a container submission on `args.setting` gets."""
    def run() -> int:
        target = client_for(args).selector_input(args.setting, args.directory)
        files = sum(1 for p in target.rglob("*") if p.is_file())
        print(f"{target}: the /input tree of {args.setting} ({files} files)")
        return 0
    return api_call(run, args)


HANDLERS = {
    "run": run_command,
    "demo-input": demo_command,
    "input": input_command,
}
"""The handler of each `expaudit selector` action of the local sandbox."""
