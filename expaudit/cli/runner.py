"""`expaudit runner`: serve the `rollouts` and `selectors` queues (simulator and sandbox role).

    expaudit runner [--redis-url URL] [--frozen-root DIR] [--cells-dir DIR] [--burst]
                    [--policy-device DEVICE] [--policy-envs N]

`--redis-url` defaults to $EXPAUDIT_REDIS_URL and `--frozen-root` to
$EXPAUDIT_FROZEN_ROOT, else the frozen data shipped in the package: the
published data, only read. Computed cells are appended to the journals of
`--cells-dir` (default $EXPAUDIT_CELLS_DIR, else `cells` beside a local store:
`var/cells`), which web and workers read too, so in a deployment it is a
volume shared with them. The audits of container submissions
(queue `selectors`) run here in the sandbox of $EXPAUDIT_SANDBOX, with the
same store and catalog configuration as the worker; in a deployment the runner
alone holds the Docker socket.

Image-policy cells run their forward passes on `--policy-device` (default
$EXPAUDIT_POLICY_DEVICE, else `cpu`; `cuda` or `cuda:N` for a GPU) with
`--policy-envs` environments stepped in lockstep (default
$EXPAUDIT_POLICY_ENVS, else 1; one on a CPU keeps every cell bit-reproducible).

This module builds the parser and checks the policy options; the handler
(`runner_handlers`) loads the service's runner, Redis and the sandbox, so it
is loaded when the command runs and `expaudit --help` stays light.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping

from expaudit import cli
from expaudit.errors import InvalidInput


class PolicyOptionError(InvalidInput, ValueError):
    """A `--policy-device` or `--policy-envs` value (or its variable) that is not one."""


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
                        help="directory the computed cells are appended to, read by web and "
                             "workers too (default $EXPAUDIT_CELLS_DIR, else `cells` beside a "
                             "local store)")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--policy-device",
                        help="device of the image policies' forward passes: cpu, cuda or cuda:N "
                             "(default $EXPAUDIT_POLICY_DEVICE, else cpu)")
    parser.add_argument("--policy-envs",
                        help="policy environments stepped in lockstep, one batched forward pass "
                             "per step (default $EXPAUDIT_POLICY_ENVS, else 1)")


def policy_options(device: str | None, envs: str | None,
                   environ: Mapping[str, str]) -> tuple[str, int]:
    """(device, envs) from the flags, else the environment, else (`cpu`, 1).

    Raises `PolicyOptionError` (an InvalidInput) naming the flag or variable whose value is not a
    device (`cpu`, `cuda`, `cuda:N`) or not a whole number of at least 1.
    """
    device_name, envs_name = "--policy-device", "--policy-envs"
    if device is None:
        device_name = "EXPAUDIT_POLICY_DEVICE"
        device = environ.get(device_name) or "cpu"
    if envs is None:
        envs_name = "EXPAUDIT_POLICY_ENVS"
        envs = environ.get(envs_name) or "1"
    device = device.strip()
    if device != "cpu" and not re.fullmatch(r"cuda(:\d+)?", device):
        raise PolicyOptionError(f"{device_name} must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    try:
        count = int(envs)
    except ValueError:
        count = 0
    if count < 1:
        raise PolicyOptionError(f"{envs_name} must be a whole number of at least 1, got {envs!r}")
    return device, count


def main(argv: list[str] | None = None) -> int:
    """`python -m expaudit.cli.runner` runs the same command without the `expaudit` entry point
    (errors reported alike)."""
    return cli.main(["runner", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
