"""The handler of `expaudit runner`: serve the `selectors` and `rollouts` queues.

It loads the service's rollout runner, Redis and the sandbox, so the
command's parser (`runner`) loads this module only when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace

from benchmark_data.paths import FROZEN_ROOT, root_or_default
from expaudit.errors import InvalidInput
from service.runner import run_runner
from service.process import computed_cells_dir, defaults, from_env, redis_answers
from service.queues import build_context
from service.store import open_store, sync_frozen


class PolicyOptionError(InvalidInput, ValueError):
    """A `--policy-device` or `--policy-envs` value (or its variable) that is not one."""


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



def run_runner_command(args: argparse.Namespace) -> int:
    """Check the flags, then serve the selectors and rollouts queues until stopped (or, with
    `--burst`, until they are empty)."""
    config = from_env()  # the same reading of the environment as web and worker
    redis_url = args.redis_url or config.redis_url
    if not redis_url:
        print("expaudit runner: no Redis: pass --redis-url or set EXPAUDIT_REDIS_URL",
              file=sys.stderr)
        return 2
    root = root_or_default(args.frozen_root or config.frozen_root)
    if getattr(args, "sync_frozen", False):
        if root.resolve() == FROZEN_ROOT.resolve():
            print("expaudit runner: --sync-frozen needs --frozen-root (or "
                  "$EXPAUDIT_FROZEN_ROOT): the packaged data is only read", file=sys.stderr)
            return 2
        done = sync_frozen(open_store(config), root)
        print(f"runner: frozen data in {root} matches the store's ({done.files} files, "
              f"{done.written} downloaded)", flush=True)
    if not root.is_dir():
        print(f"expaudit runner: --frozen-root '{root}' is not a directory", file=sys.stderr)
        return 2
    if getattr(args, "cells_dir", None):
        config = replace(config, cells_dir=args.cells_dir)
    cells_dir = computed_cells_dir(config).absolute()
    # a bad value is a PolicyOptionError (a UserError): the command's one line, exit status 2
    device, envs = policy_options(args.policy_device, args.policy_envs, os.environ)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with redis_answers(redis_url):
        context = build_context(replace(config, redis_url=redis_url, frozen_root=str(root),
                                        cells_dir=str(cells_dir)), sandbox=True)
        print(f"runner: serving the selectors and rollouts queues (sandbox {config.sandbox}), "
              f"frozen data read from {root}, computed cells go to the store "
              f"({context.store.describe()}), older ones read from {cells_dir}, policies run "
              f"on {device} with {envs} env(s)", flush=True)
        run_runner(context.redis, root, context, cells_dir=cells_dir, burst=args.burst,
                   policy_device=device, policy_envs=envs,
                   heartbeat_ttl_s=args.heartbeat_s or defaults.RUNNER_HEARTBEAT_TTL_S)
    return 0
