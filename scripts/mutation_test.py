"""Mutation testing (mutmut) of the parts whose tests must catch bugs; run outside CI.

    scripts/mutation_test.sh [GROUP ...] [--max-children N] [--keep DIR]

GROUPs are the tables of `[tool.expaudit.mutation]` in pyproject.toml (what
is mutated, which tests run); none given means `metrics cells`. mutmut
rewrites the sources it mutates (in its `mutants/` directory), so each group
runs in its own scratch copy of the working tree (tracked and untracked
files that git does not ignore), never in the tree itself: a stopped run
cannot leave a mutated file behind, and a mutant that writes where the code
writes (a mutated `root` argument writes into the frozen data) changes only
that copy. The frozen data of the copy is compared with the tree's after the
run; a difference is reported, since tests that read it afterwards may have
failed for that reason. The shared mutmut settings are `[tool.mutmut]`; each
copy gets them with its group's files and tests.

Prints each group's score (killed / (killed + survived), timeouts counted as
killed) and every surviving mutant's diff, and writes them to `report.txt`
in the scratch directory, whose path is printed (`--keep DIR`, or a fresh
temporary directory; each group's copy stays there for `mutmut browse`).
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
GROUP_MUTMUT_LISTS = ("also_copy", "do_not_mutate")
"""mutmut settings a group may add: files its tests need in the copy, files never mutated."""
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
    for key in GROUP_MUTMUT_LISTS:  # a group's own mutmut lists, joined
        joined = sorted({v for group in groups for v in group.get(key, [])} | set(base.get(key, [])))
        if joined:
            table[key] = joined
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


def _frozen_changes(target: Path) -> list[str]:
    """Frozen-data files that differ between the copy and its `mutants/` directory."""
    frozen = target / "benchmark_data" / "frozen"
    changed = []
    for path in sorted(p for p in frozen.rglob("*") if p.is_file()):
        twin = target / "mutants" / path.relative_to(target)
        if not twin.is_file() or twin.read_bytes() != path.read_bytes():
            changed.append(str(path.relative_to(target)))
    return changed


def _run_group(base: Path, name: str, max_children: int) -> tuple[int, str]:
    target = base / name
    target.mkdir()
    _copy_tree(target)
    _write_config(target, [name])
    print(f"mutation_test: group {name} in {target}", flush=True)
    run = _mutmut(target, "run", "--max-children", str(max_children))
    report = f"== {name}\n" + _report(target)
    changed = _frozen_changes(target)
    if changed:
        report += (f"WARNING: a mutant changed the frozen data of this copy ({', '.join(changed[:3])}): "
                   "tests that read it afterwards may have failed for that reason\n")
    return run.returncode, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", default=list(DEFAULT_GROUPS))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="scratch directory (created; must not exist)")
    parser.add_argument("--machine-of-its-own", action="store_true",
                        help="allow groups whose mutants can harm the machine they run on")
    args = parser.parse_args(argv)
    known = _groups(tomllib.loads((REPO / "pyproject.toml").read_text()))
    unknown = [n for n in args.groups if n not in known]
    if unknown:
        raise SystemExit(f"mutation_test: unknown group {unknown[0]!r}; groups: {', '.join(known)}")
    unsafe = [n for n in args.groups if known[n].get("machine_of_its_own") and not args.machine_of_its_own]
    if unsafe:
        raise SystemExit(f"mutation_test: group {unsafe[0]!r} runs mutants that can harm this machine "
                         f"(a limit dropped under a fork bomb, limits written to another cgroup): run it "
                         f"on a machine of its own with --machine-of-its-own")
    if args.keep:
        args.keep.mkdir(parents=True)
        base = args.keep.resolve()
    else:
        base = Path(tempfile.mkdtemp(prefix="expaudit-mutation-"))
    status, reports = 0, []
    for name in args.groups:
        code, report = _run_group(base, name, args.max_children)
        status = status or code
        reports.append(report)
        (base / "report.txt").write_text("\n".join(reports))
        print(report, end="", flush=True)
    print(f"mutation_test: report in {base / 'report.txt'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
