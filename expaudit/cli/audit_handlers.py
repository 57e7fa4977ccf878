"""The handler of `expaudit audit`: read the inputs, run the audit, write the reports.

It loads the audit engine (pandas, numpy) and the report renderers, so the
command's parser (`audit`) loads this module only when an audit runs.
"""

from __future__ import annotations

import argparse
import json
import sys

from leaderboard.audit import run_audit
from leaderboard.scores import read_inputs
from leaderboard.site.html_report import render_report_html
from leaderboard.site.report_text import render_summary


def run_audit_command(args: argparse.Namespace) -> int:
    """Read, audit, write; bad input raises `InputError`, which the command reports in one line."""
    data, submitted = read_inputs(args.experiences, args.outcomes, args.scenes, args.scores)
    report = run_audit(
        data,
        submitted.scores,
        selection_only=submitted.selection_only,
        n_shuffles=args.shuffles,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    ).to_dict()
    outputs = []
    if args.json:
        outputs.append((args.json, json.dumps(report, sort_keys=True, indent=2) + "\n"))
    if args.html:
        outputs.append((args.html, render_report_html(report)))
    for path, text in outputs:
        try:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            sys.stderr.write(f"expaudit audit: error: {path}: cannot be written: {exc.strerror}\n")
            return 2
    if not args.json:
        sys.stdout.write(render_summary(report))
    return 0
