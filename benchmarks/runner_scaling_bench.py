"""Time to fill a sealed setting's missing cells with 1, 2 and 4 runner processes.

Each runner is a real `expaudit runner` process with its own copy of the frozen data and its
own working directory; runners share only a real Redis (redis-server) and a real S3 server
(SeaweedFS), as runners on separate hosts do (docs/self_hosting.md, "More hosts"). For each
runner count: a fresh Redis database and store prefix, the runners started and registered,
then the chunks of `stack-replay-k10-hidden` on the first `--states` physical states of
`stack-hidden` (10 experiences x states x 5 seeds cells; chunks of one experience, as the
service plans them) are enqueued, and the clock runs until every cell is in the store. The
cells of every run are checked to be the same (same keys, same final simulator hashes).

Printed: seconds per runner count, cells per second, and the speed-up against one runner
(time with 1 / time with N). On a machine with C cores, at most min(N, C) runners run at
once, so the ratio is bounded by the cores, not the runners.

Usage:  .venv/bin/python benchmarks/runner_scaling_bench.py [--states 4] [--runners 1,2,4]
        [--rounds 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
import redis as redis_lib  # noqa: E402
from rq import Queue, Worker  # noqa: E402

from benchmark_data.frozen import load_transfer  # noqa: E402
from benchmark_data.paths import query_set_dir  # noqa: E402
from service.process import defaults  # noqa: E402
from service.queues.rollout_jobs import ensure_chunks, plan_rollouts  # noqa: E402
from service.store.computed_cells import StoreCells  # noqa: E402
from service.store.storage import S3Store  # noqa: E402
from tests.support.servers import (S3_ACCESS_KEY, S3_SECRET_KEY, ProcessServer,  # noqa: E402
                                   RedisServer, SeaweedServer, service_env)
from tests.support.tiny_frozen import copy_library, copy_query_set, experience_ids  # noqa: E402

SETTING, MECH, QUERY_SET = "stack-replay-k10-hidden", "replay", "stack-hidden"


def frozen_copy(root: Path, states: list[str]) -> Path:
    """A frozen root of one runner's own: the K=10 library and `states` of stack-hidden."""
    copy_library(root, experience_ids(10))
    copy_query_set(root, QUERY_SET, states)
    return root


def fill_once(work: Path, n_runners: int, states: list[str], redis_server: RedisServer,
              seaweed: SeaweedServer, bucket: str, db: int) -> tuple[float, dict]:
    """Seconds from enqueueing the chunks to every cell stored, with `n_runners` runners;
    and the cells stored (key -> final hash)."""
    url = redis_server.url.rsplit("/", 1)[0] + f"/{db}"
    prefix = f"run-{uuid.uuid4().hex[:8]}"
    conn = redis_lib.Redis.from_url(url)
    conn.flushdb()
    runners = []
    try:
        for i in range(n_runners):
            home = work / f"{prefix}-runner{i}"
            root = frozen_copy(home / "frozen", states)
            (home / "work").mkdir(parents=True)
            env = service_env(EXPAUDIT_REDIS_URL=url, EXPAUDIT_STORE=f"s3://{bucket}/{prefix}",
                              EXPAUDIT_S3_ENDPOINT=seaweed.endpoint,
                              AWS_ACCESS_KEY_ID=S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET_KEY,
                              EXPAUDIT_FROZEN_ROOT=str(root), EXPAUDIT_CELLS_DIR=str(home / "cells"),
                              PYTHONPATH=str(REPO))
            runners.append(ProcessServer([sys.executable, "-m", "expaudit", "runner"],
                                         home / "runner.log", env=env, cwd=home / "work").start())
        queue = Queue(defaults.ROLLOUT_QUEUE, connection=conn)
        deadline = time.monotonic() + 300
        while Worker.count(queue=queue) < n_runners:
            if time.monotonic() > deadline or not all(r.alive for r in runners):
                raise RuntimeError("runners did not register:\n" +
                                   "\n".join(r.log_tail(2000) for r in runners))
            time.sleep(0.2)
        data = load_transfer(SETTING, work / f"{prefix}-runner0" / "frozen")
        plan = plan_rollouts(data, MECH, QUERY_SET)
        cells = StoreCells(S3Store(seaweed.client(), bucket, prefix))
        started = time.perf_counter()
        ensure_chunks(conn, plan.pending)
        while True:
            stored = cells.records(MECH, QUERY_SET)
            if len(stored) >= plan.total:
                break
            if not any(r.alive for r in runners):
                raise RuntimeError("runners died:\n" + "\n".join(r.log_tail(2000) for r in runners))
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        return elapsed, {(r["experience_id"], r["state_id"], r["seed"]): r["final_hash"]
                         for r in stored}
    finally:
        for runner in runners:
            runner.stop()
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=4,
                        help="physical states of stack-hidden to fill (10 x 5 cells each)")
    parser.add_argument("--runners", default="1,2,4", help="runner counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="runs per count (best is kept)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.runners.split(",")]
    scenes = pd.read_parquet(query_set_dir(QUERY_SET) / "scenes.parquet")
    states = list(dict.fromkeys(scenes["state_id"]))[:args.states]
    with tempfile.TemporaryDirectory(prefix="runner-scaling-") as tmp:
        work = Path(tmp)
        redis_server = RedisServer(work / "redis").start()
        seaweed = SeaweedServer(work / "weed").start()
        try:
            bucket = "scaling"
            seaweed.make_bucket(bucket)
            results: dict[int, float] = {}
            reference = None
            for round_ in range(args.rounds):
                for n in counts:
                    seconds, stored = fill_once(work, n, states, redis_server, seaweed, bucket,
                                                db=1 + round_ * len(counts) + counts.index(n))
                    if reference is None:
                        reference = stored
                    if stored != reference:
                        raise SystemExit(f"{n} runners stored other cells than the first run")
                    results[n] = min(results.get(n, float("inf")), seconds)
                    print(f"  round {round_ + 1}: {n} runner(s): {seconds:.1f} s", flush=True)
        finally:
            seaweed.stop()
            redis_server.stop()
    total = len(reference)
    base = results[counts[0]]
    print(f"\n{SETTING} on {len(states)} state(s): {total} cells; {os.cpu_count()} CPU core(s)")
    print(f"{'runners':>8} {'seconds':>9} {'cells/s':>8} {'speed-up vs ' + str(counts[0]):>16}")
    for n in counts:
        print(f"{n:>8} {results[n]:>9.1f} {total / results[n]:>8.2f} {base / results[n]:>16.2f}")
    print("every run stored the same cells (keys and final simulator hashes)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"setting": SETTING, "states": len(states), "cells": total, "cores": os.cpu_count(),
             "seconds": {str(n): s for n, s in results.items()},
             "speedup": {str(n): base / results[n] for n in counts}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
