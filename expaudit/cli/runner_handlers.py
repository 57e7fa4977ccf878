"""The handler of `expaudit runner`: serve the `selectors` and `rollouts` queues.

It loads the service's rollout runner, Redis and the sandbox, so the
command's parser (`runner`) loads this module only when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace

from benchmark_data.paths import root_or_default
from expaudit.cli.runner import policy_options
from service.rollout_runner import run_runner
from service.config import computed_cells_dir, from_env
from service.worker import build_context, redis_answers


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
              f"frozen data read from {root}, computed cells go to {cells_dir}, policies run "
              f"on {device} with {envs} env(s)", flush=True)
        run_runner(context.redis, root, context, cells_dir=cells_dir, burst=args.burst,
                   policy_device=device, policy_envs=envs)
    return 0
