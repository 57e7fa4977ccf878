"""`expaudit runner`: serve the `rollouts` and `selectors` queues (simulator and sandbox role).

    expaudit runner [--redis-url URL] [--frozen-root DIR] [--cells-dir DIR] [--burst]
                    [--policy-device DEVICE] [--policy-envs N]

Each option defaults to its environment variable (docs/runners.md, "Running a runner"):
the frozen root is only read, computed cells go to `--cells-dir` (shared with web and
workers), container submissions run in the sandbox of $EXPAUDIT_SANDBOX, and image-policy
cells run on `--policy-device` (default cpu) with `--policy-envs` environments in
lockstep (default 1, which keeps every cell bit-reproducible on a CPU).

This module builds the parser; the handler (`runner_handlers`) checks the options and
loads the service's runner, Redis and the sandbox, so `expaudit --help` stays light.
"""

from __future__ import annotations

import argparse
import sys

from expaudit import cli
from expaudit.cli.args import positive_int


def _run(args: argparse.Namespace) -> int:
    """Serve the runner's queues."""
    from expaudit.cli import runner_handlers  # deferred: the handler loads the service and Redis

    return runner_handlers.run_runner_command(args)


def register(subparsers) -> None:
    """Add `runner` to the `expaudit` parser."""
    runner = subparsers.add_parser("runner", help="run rollout jobs (missing matrix cells) and "
                                                  "container submissions' selectors")
    _flags(runner)
    runner.set_defaults(handler=_run)


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-url",
                        help="Redis holding the queues (default $EXPAUDIT_REDIS_URL)")
    parser.add_argument("--frozen-root",
                        help="published frozen data directory, only read "
                             "(default $EXPAUDIT_FROZEN_ROOT, else the packaged data)")
    parser.add_argument("--cells-dir",
                        help="legacy directory of computed cells, only read: new cells go "
                             "to the object store ($EXPAUDIT_STORE) (default "
                             "$EXPAUDIT_CELLS_DIR, else `cells` beside a local store)")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--policy-device",
                        help="device of the image policies' forward passes: cpu, cuda or cuda:N "
                             "(default $EXPAUDIT_POLICY_DEVICE, else cpu)")
    parser.add_argument("--policy-envs",
                        help="policy environments stepped in lockstep, one batched forward pass "
                             "per step (default $EXPAUDIT_POLICY_ENVS, else 1)")
    parser.add_argument("--sync-frozen", action="store_true",
                        help="first make --frozen-root hold the frozen data the main host pushed "
                             "to the store (`expaudit service push-frozen`): changed or missing "
                             "files downloaded and checked against their sha256")
    parser.add_argument("--heartbeat-s", type=positive_int,
                        help="seconds without a beat after which a rollout chunk of this runner "
                             "counts as abandoned (its runner or host died) and is run again "
                             "(default 120; longer than one batch of cells)")


def main(argv: list[str] | None = None) -> int:
    """`python -m expaudit.cli.runner` runs the same command without the `expaudit` entry point
    (errors reported alike)."""
    return cli.main(["runner", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
