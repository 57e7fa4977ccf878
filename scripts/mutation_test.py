"""Mutation testing (mutmut) of the parts whose tests must catch bugs; run outside CI.

    scripts/mutation_test.sh [GROUP ...] [--max-children N] [--keep DIR]

GROUPs are the tables of `[tool.expaudit.mutation]` in pyproject.toml (what
is mutated, which tests run); none given means `metrics cells`. mutmut
rewrites the sources it mutates (in its `mutants/` directory), so the run
happens in a scratch copy of the working tree (tracked and untracked files
that git does not ignore), never in the tree itself: a stopped run cannot
leave a mutated file behind. The shared mutmut settings are
`[tool.mutmut]`; the copy gets them with the chosen groups' files and tests.

Prints the score (killed / (killed + survived), timeouts counted as killed)
and every surviving mutant's diff, and writes both to `report.txt` in the
scratch copy, whose path is printed (kept with `--keep DIR`; otherwise a
fresh temporary directory, left for `mutmut browse`).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GROUPS = ("metrics", "cells")
KILLED = ("killed", "timeout")
"""mutmut statuses where a test noticed the mutant (a hang counts: the test did not pass)."""


def _groups(pyproject: dict) -> dict[str, dict]:
    return pyproject["tool"]["expaudit"]["mutation"]


def _toml(value) -> str:
    """A TOML value for the strings, numbers, booleans and lists the mutmut table holds."""
    return json.dumps(value)


def _mutmut_table(base: dict, groups: list[dict], root: Path) -> str:
    """`[tool.mutmut]`: the shared settings plus the groups' files and (existing) test paths."""
    tests = sorted({path for group in groups for pattern in group["tests"]
                    for path in glob.glob(pattern, root_dir=root)})
    if not tests:
        raise SystemExit("mutation_test: the chosen groups name no existing test file")
    table = {**base,
             "only_mutate": [p for group in groups for p in group["mutate"]],
             "pytest_add_cli_args_test_selection": tests}
    return "[tool.mutmut]\n" + "".join(f"{key} = {_toml(value)}\n" for key, value in table.items())


def _copy_tree(target: Path) -> None:
    """Tracked and untracked, not ignored files of the working tree, as they are now."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout
    subprocess.run(["rsync", "-a", "--from0", "--files-from=-", "./", str(target)], cwd=REPO,
                   input=listed, check=True)
    (target / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)


def _write_config(target: Path, names: list[str]) -> None:
    text = (target / "pyproject.toml").read_text()
    pyproject = tomllib.loads(text)
    known = _groups(pyproject)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"mutation_test: unknown group {unknown[0]!r}; groups: {', '.join(known)}")
    table = _mutmut_table(pyproject["tool"]["mutmut"], [known[n] for n in names], target)
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", lambda _: table + "\n", text, count=1)
    (target / "pyproject.toml").write_text(text)


def _mutmut(target: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=target, env=env, text=True,
                          **kwargs)


def _report(target: Path) -> str:
    listed = _mutmut(target, "results", "--all", "true", capture_output=True, check=True).stdout
    status = dict(line.strip().rsplit(": ", 1) for line in listed.splitlines() if ": " in line)
    counts: dict[str, int] = {}
    for value in status.values():
        counts[value] = counts.get(value, 0) + 1
    killed = sum(counts.get(s, 0) for s in KILLED)
    survived = counts.get("survived", 0)
    lines = [f"mutants: {len(status)}; " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
             f"score: {killed}/{killed + survived} killed"
             + (f" ({100 * killed / (killed + survived):.1f}%)" if killed + survived else "")]
    for name in sorted(n for n, s in status.items() if s == "survived"):
        diff = _mutmut(target, "show", name, capture_output=True).stdout
        changed = [line for line in diff.splitlines()
                   if line[:1] in "-+" and not line.startswith(("---", "+++"))]
        lines += ["", f"survived: {name}", *changed]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", default=list(DEFAULT_GROUPS))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="scratch directory (created; must not exist)")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True)
        target = args.keep.resolve()
    else:
        target = Path(tempfile.mkdtemp(prefix="expaudit-mutation-"))
    _copy_tree(target)
    _write_config(target, args.groups)
    print(f"mutation_test: groups {' '.join(args.groups)} in {target}", flush=True)
    run = _mutmut(target, "run", "--max-children", str(args.max_children))
    report = _report(target)
    (target / "report.txt").write_text(report)
    print(report, end="")
    print(f"mutation_test: report in {target / 'report.txt'}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
