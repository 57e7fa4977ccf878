"""The handlers of the `expaudit data` actions that run the simulator: generate, train and
evaluate policies, verify, render images, build the Door data and adopt the staging root.

They need the `sim` extra (robosuite, MuJoCo) and, for policies, torch, so
`data_handlers` loads this module only when one of these actions runs.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from benchmark_data.generation.adopt_staging import adopt, drop_stale, staging_state
from benchmark_data.generation.images import write_base_images, write_query_images
from benchmark_data.generation.library_stream import build_door_library
from benchmark_data.generation.policies import evaluate_policy
from benchmark_data.generation.query_set_build import door_scene_rows
from benchmark_data.generation.recipe_policies import train_recipe_policy
from benchmark_data.generation.rollouts import (ensure_stack_inputs, plan_all, plan_policy_setting,
                                                plan_setting, run_cells)
from benchmark_data.generation.verify import verify_policy_sample, verify_sample
from benchmark_data.paths import STAGING_ROOT, root_or_default
from benchmark_data.policy_files import is_trained, policy_dir, policy_experiences
from benchmark_data.query_sets import write_scenes
from benchmark_data.registry import LIBRARY_IDS, N_SEEDS, QUERY_SETS, SETTINGS, Mechanism, get_setting
from expaudit.errors import InvalidInput
from expaudit.numerics import blas_kernel, cpu_model, torch_cpu_capability
from simulator.appearance import SceneRenderer
from simulator.door_sim import DoorSim
from simulator.provenance import policy_mechanism_of
from simulator.stack_sim import StackSim


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print(f"[{stamp}] {message}", flush=True)


def generate(args: argparse.Namespace) -> int:
    seeds = args.seeds if args.seeds is not None else list(range(N_SEEDS))
    bad = [s for s in seeds if not 0 <= s < N_SEEDS]
    if bad:
        print(f"expaudit data generate: --seeds: {bad[0]} is not in 0-{N_SEEDS - 1}", file=sys.stderr)
        return 2
    if args.policies:
        ids = [s.id for s in SETTINGS.values() if s.task == args.policies
               and s.mechanism in (Mechanism.POLICY, Mechanism.POLICY_DR)]
        cells = [c for seed in seeds for sid in ids
                 for c in plan_policy_setting(sid, [seed], root=args.root)]
    elif args.all:
        cells = plan_all()
    elif args.setting:
        setting = get_setting(args.setting)
        if setting.mechanism is Mechanism.REPLAY:
            cells = plan_setting(args.setting)
        else:
            cells = plan_policy_setting(args.setting, seeds, root=args.root)
    else:
        print("expaudit data generate: give a SETTING, --all or --policies TASK", file=sys.stderr)
        return 2
    query_sets = sorted({c.query_set for c in cells} - {"stack-base"})
    ensure_stack_inputs(query_sets, root=args.root, log=_log)
    if args.limit is not None:
        cells = cells[: args.limit]
    ran = run_cells(cells, workers=args.workers, root=args.root, out=args.out, log=_log)
    _log(f"done: {ran} cells executed")
    return 0


def train_policies(args: argparse.Namespace) -> int:
    todo = [(t, m, e) for t, m, e in policy_experiences()
            if (args.task is None or t == args.task) and (args.mechanism is None or m == args.mechanism)
            and (not args.experience or e in args.experience)]
    if not todo:
        print("expaudit data train-policies: no policy matches the filters", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out is not None else STAGING_ROOT
    if out.resolve() == root_or_default(args.root).resolve():
        print(f"expaudit data train-policies: --out {out} is the published root, whose cells were "
              "made by the policies there: new policies are made in a staging root until their cells "
              "are regenerated and adopted (expaudit data adopt-staging; benchmark_data/staging/README.md)",
              file=sys.stderr)
        return 2

    def trained(mechanism: str, eid: str) -> bool:
        """Trained in `out` by today's mechanism; a policy of a retired mechanism is trained anew."""
        if not is_trained(mechanism, eid, out):
            return False
        try:
            policy_mechanism_of(str(policy_dir(mechanism, eid, out)))
        except InvalidInput:
            return False
        return True

    pending = [k for k in todo if args.force or not trained(k[1], k[2])]
    _log(f"{len(todo)} policies selected, {len(todo) - len(pending)} already trained, "
         f"{len(pending)} to train on {args.workers} process(es)")
    if not pending:
        return 0
    jobs = [(t, m, e, args.root, out, args.workdir) for t, m, e in pending]
    if args.workers <= 1:
        for job in jobs:
            train_one(job)
    else:
        with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
            for _ in pool.imap_unordered(train_one, jobs):
                pass
    return 0


def train_one(job) -> None:
    """Train one policy (a worker of `train_policies`; torch loads in the training, after this
    process's OpenMP threads are set to one)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    task, mechanism, eid, root, out, workdir = job
    path = train_recipe_policy(task, mechanism, eid, Path(workdir) / f"{eid}-{mechanism}", root=out,
                               library_root=root, log=lambda line: _log(f"{mechanism} {eid}: {line}"))
    _log(f"wrote {path}")


def evaluate(args: argparse.Namespace) -> int:
    import torch  # deferred: heavy optional dependency

    torch.set_num_threads(1)
    # a missing policy, a bad draw or an unknown query set is a UserError: the command's one line
    counts = evaluate_policy(args.mechanism, args.experience, args.on, draw=args.draw, seed=args.seed,
                             limit=args.limit, root=args.root)
    done = sum(s for s, _ in counts.values())
    total = sum(n for _, n in counts.values())
    for group, (s, n) in sorted(counts.items()):
        print(f"{group}: {s}/{n}")
    print(f"{args.mechanism} {args.experience} on {args.on}: {done}/{total} episodes succeeded")
    return 0


def verify(args: argparse.Namespace) -> int:
    reports = []
    if args.sample == 0 and args.policy_sample == 0:
        print("expaudit data verify: --sample and --policy-sample are both 0: nothing to verify",
              file=sys.stderr)
        return 2
    # nothing stored to sample from is a NothingToVerify (a UserError): the command's one line
    if args.sample > 0:
        reports.append((verify_sample(args.sample, seed=args.seed, workers=args.workers, root=args.root),
                        "cells across renders and from scratch"))
    if args.policy_sample > 0:
        reports.append((verify_policy_sample(args.policy_sample, seed=args.seed, root=args.root,
                                             out=args.out),
                        "policy cells from scratch"))
    for report, what in reports:
        for m in report.mismatches:
            print(f"MISMATCH {'/'.join(map(str, m.key))} draw {m.draw}: {m.field} stored "
                  f"{m.stored!r}, re-run {m.rerun!r}")
        print(f"verified {report.n_checked} {what}: {len(report.mismatches)} difference(s) in "
              f"{report.cells_differing()} cell(s), success differs in {report.cells_differing('success')}")
        if report.made_elsewhere:
            print(f"{report.made_elsewhere} of the re-run cells record another CPU than this one "
                  f"({cpu_model() or 'unknown'}) or none: a policy's rollout there can end in another "
                  "final state, rarely with another success (docs/data.md, \"What reproduces where\")")
    if not all(report.ok for report, _ in reports):
        kernels = f"numpy's OpenBLAS kernel {blas_kernel()}"
        if args.policy_sample > 0:
            kernels += f" and torch's {torch_cpu_capability()} kernels"
        print(f"(re-executed with {kernels}; each cell's packages record names the kernels it "
              f"ran with, docs/data.md says what reproduces where)")
    return 0 if all(report.ok for report, _ in reports) else 1


def images(args: argparse.Namespace) -> int:
    unknown = [q for q in args.query_sets if q not in QUERY_SETS]
    if unknown:
        print(f"expaudit data images: unknown query set(s) {unknown}; known: {sorted(QUERY_SETS)}",
              file=sys.stderr)
        return 2
    for task in ("stack", "door"):
        sets = [q for q in args.query_sets if QUERY_SETS.get(q) == task]
        if not sets:
            continue
        sim = StackSim() if task == "stack" else DoorSim()
        renderer = SceneRenderer(sim, task=task)
        for query_set in sets:
            _log(f"wrote {write_query_images(query_set, sim, renderer, args.root)}")
        _log(f"wrote {write_base_images(LIBRARY_IDS[task], sim, renderer, args.root)}")
        renderer.close()
    return 0


def door(args: argparse.Namespace) -> int:
    sim = DoorSim()
    for query_set in ("door-orig", "door-fresh"):
        _log(f"wrote {write_scenes(query_set, door_scene_rows(query_set, sim), args.root)}")
    _log(f"wrote {build_door_library(sim, args.root)}")
    return 0


def adopt_staging(args: argparse.Namespace) -> int:
    """`--check` lists what is missing; `--drop-stale` removes stale cells; else adopt."""
    if args.check:
        state = staging_state(args.staging, args.root)
        for line in state.problems():
            print(line)
        print("ready to adopt" if state.ready else f"not ready: {len(state.problems())} item(s) missing")
        return 0 if state.ready else 1
    if args.drop_stale:
        removed = drop_stale(args.staging, args.root, log=_log)
        _log(f"{removed} stale cells removed" + ("; run `expaudit data generate --policies TASK --out "
                                                 "STAGING` to run them anew" if removed else ""))
        return 0
    adopt(args.staging, args.root, log=_log)
    _log("adopted; now regenerate the pages, findings and leaderboard (docs/data.md, "
         "\"Adopting the regenerated policy settings\")")
    return 0


def readout_banks(args: argparse.Namespace) -> int:
    """Generate a readout bank (resumable), check stored cells against fresh renders or rebuild
    lost sealed labels from the committed images."""
    from benchmark_data.generation import readout_banks as banks

    if args.check:
        problems = banks.check_bank(args.task, args.check)
        for problem in problems:
            _log(problem)
        _log(f"{args.task}: {args.check} stored cells re-rendered, {len(problems)} mismatches")
        return 1 if problems else 0
    if args.rebuild_sealed:
        _log(f"{args.task}: sealed labels installed: {banks.rebuild_sealed_labels(args.task)}")
        return 0
    bank = banks.generate(args.task, args.splits.split(","), limit=args.limit)
    for split, record in bank["validation"].items():
        _log(f"{args.task} {split}: {record}")
    return 0


HANDLERS = {
    "readout-banks": readout_banks,
    "adopt-staging": adopt_staging,
    "generate": generate,
    "train-policies": train_policies,
    "evaluate-policy": evaluate,
    "verify": verify,
    "images": images,
    "door": door,
}
"""The handler of each `expaudit data` action that runs the simulator."""
