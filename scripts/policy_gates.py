#!/usr/bin/env python
"""The gates of every mechanism-2 policy under a data root, and the go / no-go (docs/policy_protocol.md).

    scripts/policy_gates.py [ROOT]      # default: benchmark_data/staging

Reads each policy's `training.json` (written by `expaudit data train-policies`)
and prints a Markdown table: own layouts, draw 0 and draws 1-4 on the
validation set with their n, the gates' verdicts, training minutes. Then the
go / no-go: the validation random success of the Stack Policy policies (mean
over the trained ones and the 200 validation scenes of each), against 0.2,
and whether all three are in.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark_data.generation.recipe_gates import (  # noqa: E402
    GO_BAR, go_no_go, staged_records, validation_rate,
)


def table(rows: list[dict]) -> list[str]:
    lines = ["| policy | own layouts | draw 0 | draws 1-4 | gates | demos (tries) | training min |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r["validation"]["groups"]
        failed = [name for name, gate in r["gates"].items() if not gate["passed"]]
        minutes = r["train_wall_s"] / 60 if r.get("train_wall_s") is not None else float("nan")
        lines.append(f"| {r['experience_id']} {'Policy+DR' if r['mechanism'] == 'policy_dr' else 'Policy'} | "
                     + " | ".join(f"{g[k][0]}/{g[k][1]}" for k in ("own", "draw 0", "draws 1-4"))
                     + f" | {'all pass' if not failed else 'fails: ' + ', '.join(failed)}"
                     + f" | {r['n_demos']} ({r['tries']}) | {minutes:.0f} |")
    return lines


def decision(rows: list[dict]) -> str:
    """The go / no-go line (`recipe_gates.go_no_go`), each Stack Policy policy's share shown."""
    mean, go = go_no_go(rows)
    if mean is None:
        return "go / no-go: no Stack Policy policy trained yet"
    stack = [r for r in rows if r["task"] == "stack" and r["mechanism"] == "policy"]
    verdict = "go" if go else ("no-go: stop and report" if len(stack) == 3 else "not yet decided")
    partial = "" if len(stack) == 3 else f" (only {len(stack)} of 3 trained)"
    return (f"go / no-go: validation random success of the Stack Policy policies {mean:.3f} ("
            + ", ".join(f"{r['experience_id']} {validation_rate(r):.3f}" for r in stack)
            + f") against {GO_BAR}: {verdict}{partial}")


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else REPO / "benchmark_data" / "staging"
    rows = staged_records(root)
    if not rows:
        print(f"no mechanism-2 policy under {root}/policies", file=sys.stderr)
        return 1
    print("\n".join(table(rows)))
    print()
    print(decision(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
