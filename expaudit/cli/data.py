"""`expaudit data ...`: generate, verify, export and hash the frozen benchmark data.

This module builds the parser only; the handlers (`data_handlers`) load the
data generation, and most of them the simulator, so they are loaded when an
action runs and `expaudit --help` stays light.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import non_negative_int, positive_int


def _run(args: argparse.Namespace) -> int:
    """Run the chosen `data` action."""
    from expaudit.cli import data_handlers  # deferred: the handlers load the data generation

    return data_handlers.run(args)


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
    gen.add_argument("--out", default=None,
                     help="data root that stores the cells, and whose policies run policy cells "
                          "(default: --root): e.g. the staging root of regenerated policies")
    gen.set_defaults(handler=_run)

    tp = sub.add_parser("train-policies",
                        help="record demonstrations, train the frozen BC-RNN policies and measure their "
                             "gates (resumable)")
    tp.add_argument("--task", choices=["stack", "door"], default=None)
    tp.add_argument("--mechanism", choices=["policy", "policy_dr"], default=None)
    tp.add_argument("--experience", nargs="+", default=None, help="experience ids (default all K=3)")
    tp.add_argument("--workers", type=int, default=2, help="policies trained at once (default 2)")
    tp.add_argument("--force", action="store_true",
                    help="write policies that exist again (resumes the work folder: delete the folder "
                         "to train anew)")
    tp.add_argument("--workdir", default="policy-training",
                    help="folder of the resumable work, one subfolder per policy (default ./policy-training)")
    tp.add_argument("--out", default=None,
                    help="data root the policies are written to (default: the staging root "
                         "benchmark_data/staging; never the published root, whose cells its policies made)")
    tp.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    tp.set_defaults(handler=_run)

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
    ev.set_defaults(handler=_run)

    ver = sub.add_parser("verify", help="re-execute random stored cells across renders and from scratch")
    ver.add_argument("--sample", type=non_negative_int, default=200, help="cells to re-execute (default 200)")
    ver.add_argument("--seed", type=non_negative_int, default=0, help="seed of the sample choice")
    ver.add_argument("--workers", type=positive_int, default=1, help="simulator processes (default 1)")
    ver.add_argument("--policy-sample", type=non_negative_int, default=0,
                     help="policy cells to re-execute from scratch on the CPU (default 0: none)")
    ver.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    ver.add_argument("--out", default=None,
                     help="policy cells: data root holding the cells and the policies that ran them "
                          "(default: --root), e.g. the staging root")
    ver.set_defaults(handler=_run)

    ado = sub.add_parser("adopt-staging",
                         help="replace the published policy settings with the staging root's complete "
                              "regeneration (policies, cells, encoder features, manifest)")
    what = ado.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true",
                      help="only list what the staging root still lacks; exit 0 when ready, 1 when not")
    what.add_argument("--drop-stale", action="store_true",
                      help="only remove the staging tables' stale cells (made by another code version of "
                           "their staged policy), so that generate runs them anew")
    ado.add_argument("--staging", default=None,
                     help="staging root (default: benchmark_data/staging)")
    ado.add_argument("--root", default=None, help="published data root (default: the package's)")
    ado.set_defaults(handler=_run)

    exp = sub.add_parser("export", help="write a setting as experiences.csv, scenes.csv, outcomes.csv")
    exp.add_argument("setting", help="setting id")
    exp.add_argument("directory", help="output directory (created if needed)")
    exp.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    exp.set_defaults(handler=_run)

    man = sub.add_parser("manifest", help="rebuild manifest.json (content hashes, completeness)")
    man.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    man.set_defaults(handler=_run)

    img = sub.add_parser("images", help="render the query-set and base-scene PNGs (needs OpenGL)")
    img.add_argument("query_sets", nargs="*",
                     default=["stack-orig", "stack-fresh", "stack-hidden", "door-orig", "door-fresh"])
    img.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    img.set_defaults(handler=_run)

    rb = sub.add_parser("readout-banks",
                        help="generate (resumable) or --check a readout observation bank (Track B)")
    rb.add_argument("task", choices=["door", "stack"])
    rb.add_argument("--splits", default="train,dev,confirm,eval",
                    help="comma-separated splits to generate (default all; confirm and eval labels "
                         "go to the sealed directory)")
    rb.add_argument("--limit", type=positive_int, default=None,
                    help="initializations per split: a small run kept apart from the bank")
    rb.add_argument("--check", type=positive_int, default=None, metavar="N",
                    help="instead: re-render N stored cells and compare with the committed bank")
    rb.add_argument("--rebuild-sealed", action="store_true",
                    help="instead: render confirm and eval again, match them to the committed images "
                         "and install their sealed labels if the sha256 is bank.json's")
    rb.set_defaults(handler=_run)

    door = sub.add_parser("door", help="write the Door query sets' scene tables and the Door library")
    door.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    door.set_defaults(handler=_run)
