"""The handlers of `expaudit readout audit` (read the bank and representations, audit, write),
`expaudit readout input` (the /input tree of a readout program, from a server) and
`expaudit readout run` (a readout program in the local sandbox on such a tree).

It loads the readout engine (pandas, numpy) and the page renderer, so the command's parser
(`readout`) loads this module only when an audit runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from expaudit.cli.sandbox_handlers import input_command
from expaudit.errors import InvalidInput, UserError
from leaderboard.readout.audit import run_readout_audit
from leaderboard.readout.bank import read_bank
from leaderboard.readout.inputs import read_features, read_predictions
from leaderboard.site.readout_report import render_readout_html, render_readout_summary
from sandbox import defaults
from sandbox.base import Limits, RunSpec, SandboxConfigError
from sandbox.execute import run_readout_program
from sandbox.local import LocalSandbox
from sandbox.readout_protocol import input_observations


def _named(spec: str, flag: str) -> tuple[str, str]:
    """`NAME=PATH` or `PATH` (named by the file's stem)."""
    name, sep, path = spec.partition("=")
    if not sep:
        path, name = spec, Path(spec.rstrip("/")).stem
    if not name or not path:
        raise InvalidInput(f"{flag} '{spec}': expected NAME=PATH or PATH")
    return name, path


def run_readout_audit_command(args: argparse.Namespace) -> int:
    """Read, audit, write; bad input raises a `UserError`, which the command reports in one line."""
    specs = [(_named(s, "--features"), read_features) for s in args.features]
    specs += [(_named(s, "--predictions"), read_predictions) for s in args.predictions]
    if not specs:
        raise InvalidInput("give at least one --features or --predictions file")
    bank = read_bank(args.bank, args.sealed_labels)
    representations = [reader(path, name) for (name, path), reader in specs]
    split = args.split or ("confirm" if args.sealed_labels else "dev")
    report = run_readout_audit(bank, representations, split=split, n_resamples=args.bootstrap, seed=args.seed,
                               min_estimable=args.min_estimable)
    outputs = []
    if args.json:
        outputs.append((args.json, json.dumps(report, sort_keys=True, indent=2, allow_nan=False) + "\n"))
    if args.html:
        outputs.append((args.html, render_readout_html(report)))
    for path, text in outputs:
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            sys.stderr.write(f"expaudit readout: error: {path}: cannot be written: {exc.strerror}\n")
            return 2
    if not args.json:
        sys.stdout.write(render_readout_summary(report))
    return 0


def run_program_command(args: argparse.Namespace) -> int:
    """Run a readout program on a /input tree and check its features as the service does;
    print the run's result with the features' shape; exit 0 only when they are valid."""
    try:
        observations = input_observations(Path(args.input))
        limits = Limits(wall_seconds=args.wall_seconds, memory_bytes=args.memory_mb * defaults.MIB,
                        pids=args.pids, cpus=args.cpus)
        spec = RunSpec(image=args.program_dir, input_dir=Path(args.input), output_dir=Path(args.output),
                       limits=limits)
        outcome = run_readout_program(LocalSandbox(), spec, observations, Path(args.program_dir).name)
    except (SandboxConfigError, UserError) as exc:
        sys.stderr.write(f"expaudit readout run: error: {exc}\n")
        return 2
    shown = {**outcome.result.to_dict(),
             "features": None if outcome.features is None else list(outcome.features.values.shape)}
    sys.stdout.write(json.dumps(shown, indent=2) + "\n")
    return 0 if outcome.features is not None else 1


HANDLERS = {
    "audit": run_readout_audit_command,
    "input": input_command,
    "run": run_program_command,
}
"""The handler of each `expaudit readout` action; `input` is `selector input`'s (the same route)."""
