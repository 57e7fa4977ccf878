"""`expaudit data ...`: generate, verify, export and hash the frozen benchmark data.

Heavy imports (robosuite, pandas) happen inside the handlers, so `expaudit --help`
stays light.
"""

from __future__ import annotations

import argparse
import sys
import time

from expaudit.cli.args import non_negative_int, positive_int


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print(f"[{stamp}] {message}", flush=True)


def _generate(args: argparse.Namespace) -> int:
    from benchmark_data.generation.rollouts import (ensure_stack_inputs, plan_all, plan_policy_setting,
                                         plan_setting, run_cells)
    from benchmark_data.registry import N_SEEDS, Mechanism, get_setting

    seeds = args.seeds if args.seeds is not None else list(range(N_SEEDS))
    bad = [s for s in seeds if not 0 <= s < N_SEEDS]
    if bad:
        print(f"expaudit data generate: --seeds: {bad[0]} is not in 0-{N_SEEDS - 1}", file=sys.stderr)
        return 2
    if args.policies:
        from benchmark_data.registry import SETTINGS

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
    ran = run_cells(cells, workers=args.workers, root=args.root, log=_log)
    _log(f"done: {ran} cells executed")
    return 0


def _train_policies(args: argparse.Namespace) -> int:
    import multiprocessing as mp

    from benchmark_data.policy_files import is_trained, policy_experiences

    todo = [(t, m, e) for t, m, e in policy_experiences()
            if (args.task is None or t == args.task) and (args.mechanism is None or m == args.mechanism)
            and (not args.experience or e in args.experience)]
    if not todo:
        print("expaudit data train-policies: no policy matches the filters", file=sys.stderr)
        return 2
    pending = [k for k in todo if args.force or not is_trained(k[1], k[2], args.root)]
    _log(f"{len(todo)} policies selected, {len(todo) - len(pending)} already trained, "
         f"{len(pending)} to train on {args.workers} process(es)")
    if not pending:
        return 0
    jobs = [(t, m, e, args.root) for t, m, e in pending]
    if args.workers <= 1:
        for job in jobs:
            _train_one(job)
    else:
        with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
            for _ in pool.imap_unordered(_train_one, jobs):
                pass
    return 0


def _train_one(job) -> None:
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from benchmark_data.generation.policies import train_policy

    task, mechanism, eid, root = job
    path = train_policy(task, mechanism, eid, root, log=_log)
    _log(f"wrote {path}")


def _evaluate_policy(args: argparse.Namespace) -> int:
    import torch

    from benchmark_data.generation.policies import evaluate_policy
    from benchmark_data.policy_files import PolicyNotFoundError

    torch.set_num_threads(1)
    try:
        counts = evaluate_policy(args.mechanism, args.experience, args.on, draw=args.draw, seed=args.seed,
                                 limit=args.limit, root=args.root)
    except (PolicyNotFoundError, KeyError, ValueError) as exc:
        print(f"expaudit data evaluate-policy: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    done = sum(s for s, _ in counts.values())
    total = sum(n for _, n in counts.values())
    for group, (s, n) in sorted(counts.items()):
        print(f"{group}: {s}/{n}")
    print(f"{args.mechanism} {args.experience} on {args.on}: {done}/{total} episodes succeeded")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from benchmark_data.generation.verify import verify_policy_sample, verify_sample
    from expaudit.numerics import blas_kernel, torch_cpu_capability

    reports = []
    if args.sample == 0 and args.policy_sample == 0:
        print("expaudit data verify: --sample and --policy-sample are both 0: nothing to verify",
              file=sys.stderr)
        return 2
    try:
        if args.sample > 0:
            reports.append((verify_sample(args.sample, seed=args.seed, workers=args.workers, root=args.root),
                            "cells across renders and from scratch"))
        if args.policy_sample > 0:
            reports.append((verify_policy_sample(args.policy_sample, seed=args.seed, root=args.root),
                            "policy cells from scratch"))
    except ValueError as exc:  # nothing stored to sample from
        print(f"expaudit data verify: {exc}", file=sys.stderr)
        return 2
    for report, what in reports:
        for m in report.mismatches:
            print(f"MISMATCH {'/'.join(map(str, m.key))} draw {m.draw}: {m.field} stored "
                  f"{m.stored!r}, re-run {m.rerun!r}")
        print(f"verified {report.n_checked} {what}: {len(report.mismatches)} difference(s) in "
              f"{report.cells_differing()} cell(s), success differs in {report.cells_differing('success')}")
    if not all(report.ok for report, _ in reports):
        kernels = f"numpy's OpenBLAS kernel {blas_kernel()}"
        if args.policy_sample > 0:
            kernels += f" and torch's {torch_cpu_capability()} kernels"
        print(f"(re-executed with {kernels}; each cell's packages record names the kernels it "
              f"ran with, docs/data.md says what reproduces where)")
    return 0 if all(report.ok for report, _ in reports) else 1


def _export(args: argparse.Namespace) -> int:
    from benchmark_data.generation.export import export_setting

    from benchmark_data.query_sets import QuerySetNotFoundError
    from benchmark_data.registry import UnknownSettingError

    try:
        result = export_setting(args.setting, args.directory, root=args.root)
    except (UnknownSettingError, QuerySetNotFoundError) as exc:
        print(f"expaudit data export: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.directory}/experiences.csv, scenes.csv, outcomes.csv "
          f"({result.n_outcomes} outcomes, {result.n_missing} cells missing)")
    return 0


def _manifest(args: argparse.Namespace) -> int:
    from benchmark_data.generation.export import write_manifest
    from benchmark_data.paths import root_or_default

    if not root_or_default(args.root).is_dir():
        print(f"expaudit data manifest: --root '{args.root}' is not a directory", file=sys.stderr)
        return 2
    path = write_manifest(args.root)
    print(f"wrote {path}")
    return 0


def _images(args: argparse.Namespace) -> int:
    from benchmark_data.generation.images import write_base_images, write_query_images
    from benchmark_data.registry import LIBRARY_IDS, QUERY_SETS
    from runner.appearance import SceneRenderer

    unknown = [q for q in args.query_sets if q not in QUERY_SETS]
    if unknown:
        print(f"expaudit data images: unknown query set(s) {unknown}; known: {sorted(QUERY_SETS)}",
              file=sys.stderr)
        return 2
    for task in ("stack", "door"):
        sets = [q for q in args.query_sets if QUERY_SETS.get(q) == task]
        if not sets:
            continue
        if task == "stack":
            from runner.stack_sim import StackSim as Sim
        else:
            from runner.door_sim import DoorSim as Sim
        sim = Sim()
        renderer = SceneRenderer(sim, task=task)
        for query_set in sets:
            _log(f"wrote {write_query_images(query_set, sim, renderer, args.root)}")
        _log(f"wrote {write_base_images(LIBRARY_IDS[task], sim, renderer, args.root)}")
        renderer.close()
    return 0


def _door(args: argparse.Namespace) -> int:
    from benchmark_data.generation.library_stream import build_door_library
    from benchmark_data.generation.query_set_build import door_scene_rows
    from benchmark_data.query_sets import write_scenes
    from runner.door_sim import DoorSim

    sim = DoorSim()
    for query_set in ("door-orig", "door-fresh"):
        _log(f"wrote {write_scenes(query_set, door_scene_rows(query_set, sim), args.root)}")
    _log(f"wrote {build_door_library(sim, args.root)}")
    return 0


def register(subparsers) -> None:
    """Add `data generate|verify|export|manifest` to the `expaudit` command."""
    data = subparsers.add_parser("data", help="generate, verify and export the frozen benchmark data")
    sub = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)

    gen = sub.add_parser("generate", help="run the rollouts of a setting (resumable)")
    gen.add_argument("setting", nargs="?", help="setting id (see benchmark_data.registry)")
    gen.add_argument("--all", action="store_true", help="all published Replay settings, in order")
    gen.add_argument("--policies", choices=["stack", "door"], default=None,
                     help="the 4 image-policy settings of a task, seed by seed (--seeds)")
    gen.add_argument("--workers", type=int, default=2, help="simulator processes (default 2)")
    gen.add_argument("--limit", type=int, default=None, help="run at most this many planned cells")
    gen.add_argument("--seeds", type=int, nargs="+", default=None,
                     help="policy settings: the seeds to run, in order (default all 5)")
    gen.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    gen.set_defaults(handler=_generate)

    tp = sub.add_parser("train-policies",
                        help="record demonstrations and train the frozen BC-RNN policies (resumable)")
    tp.add_argument("--task", choices=["stack", "door"], default=None)
    tp.add_argument("--mechanism", choices=["policy", "policy_dr"], default=None)
    tp.add_argument("--experience", nargs="+", default=None, help="experience ids (default all K=3)")
    tp.add_argument("--workers", type=int, default=2, help="policies trained at once (default 2)")
    tp.add_argument("--force", action="store_true", help="retrain policies that exist")
    tp.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    tp.set_defaults(handler=_train_policies)

    ev = sub.add_parser("evaluate-policy",
                        help="closed-loop success of one frozen policy on its demonstration layouts or a query set")
    ev.add_argument("mechanism", choices=["policy", "policy_dr"])
    ev.add_argument("experience", help="experience id, e.g. stack-e000")
    ev.add_argument("--on", default="train",
                    help="'train' (its demonstration layouts, default) or a query set id (e.g. door-orig)")
    ev.add_argument("--draw", type=int, default=0, help="query set: the appearance draw 0-4 (default 0)")
    ev.add_argument("--seed", type=non_negative_int, default=0, help="execution-noise seed (default 0)")
    ev.add_argument("--limit", type=positive_int, default=None, help="at most this many episodes")
    ev.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    ev.set_defaults(handler=_evaluate_policy)

    ver = sub.add_parser("verify", help="re-execute random stored cells across renders and from scratch")
    ver.add_argument("--sample", type=non_negative_int, default=200, help="cells to re-execute (default 200)")
    ver.add_argument("--seed", type=non_negative_int, default=0, help="seed of the sample choice")
    ver.add_argument("--workers", type=positive_int, default=1, help="simulator processes (default 1)")
    ver.add_argument("--policy-sample", type=non_negative_int, default=0,
                     help="policy cells to re-execute from scratch on the CPU (default 0: none)")
    ver.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    ver.set_defaults(handler=_verify)

    exp = sub.add_parser("export", help="write a setting as experiences.csv, scenes.csv, outcomes.csv")
    exp.add_argument("setting", help="setting id")
    exp.add_argument("directory", help="output directory (created if needed)")
    exp.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    exp.set_defaults(handler=_export)

    man = sub.add_parser("manifest", help="rebuild manifest.json (content hashes, completeness)")
    man.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    man.set_defaults(handler=_manifest)

    img = sub.add_parser("images", help="render the query-set and base-scene PNGs (needs OpenGL)")
    img.add_argument("query_sets", nargs="*",
                     default=["stack-orig", "stack-fresh", "stack-hidden", "door-orig", "door-fresh"])
    img.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    img.set_defaults(handler=_images)

    door = sub.add_parser("door", help="write the Door query sets' scene tables and the Door library")
    door.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    door.set_defaults(handler=_door)
