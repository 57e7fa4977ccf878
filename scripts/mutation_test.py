"""Mutation testing (mutmut) of the parts whose tests must catch bugs; run outside CI.

    scripts/mutation_test.sh [GROUP ... | all] [--max-children N] [--keep DIR]
                             [--resume] [--mutants PATTERN ...]

GROUPs are the tables of `[tool.expaudit.mutation]` in pyproject.toml (what
is mutated, which tests run); `all` is every group in that order, none given
means `metrics cells`. mutmut rewrites the sources it mutates (in its
`mutants/` directory), so each group runs in its own scratch copy of the
working tree (tracked and untracked files that git does not ignore), never
in the tree itself: a stopped run cannot leave a mutated file behind, and a
mutant that writes where the code writes (a mutated `root` argument writes
into the frozen data) changes only that copy. The scratch directory may not
lie inside the working tree.

mutmut runs the tests inside `mutants/`, which holds only the source paths,
`tests/`, `pyproject.toml` and its `also_copy` list; the script adds every
other top-level entry of the copy to that list (`clone_entries`), so
`mutants/` is a whole clone and a test that opens docs/ or examples/ finds
them (a copy without docs/ once failed the unmutated tests of a group, and
then no mutant was checked at all). After the run, files of the copy missing
from `mutants/` are reported, and so is a group where no mutant was checked.

The tests' own subprocesses import the copy (`PYTHONPATH` is its `mutants/`),
never the working tree, and temporary files go to the scratch directory
(`TMPDIR`). A group with `contained = true` (the sandbox's isolation: its
mutants run hostile selectors with a limit dropped and reap sandboxes) runs,
when the script runs as root, in a PID and mount namespace of its own: its
processes can signal no process outside it, all of them end with it, and it
has its own empty `/run/expaudit-workers` (where root's sandboxes keep their
records), so it touches no other sandbox on the host.

The frozen data of the copy is compared with its `mutants/` twin after the
run; a difference is reported, since tests that read it afterwards may have
failed for that reason. The shared mutmut settings are `[tool.mutmut]`; each
copy gets them with its group's files and tests.

Prints each group's score (killed / (killed + survived), timeouts counted as
killed) and every surviving mutant's diff, and writes them to `report.txt`
in the scratch directory, whose path is printed (`--keep DIR`, or a fresh
temporary directory; each group's copy stays there for `mutmut browse`).
A long group can be stopped and gone on with: `--keep DIR --resume` runs in
the group's copy already in DIR the mutants not checked yet; `--mutants`
(mutmut's names, `*` a wildcard, e.g. `sandbox.cgroups.*`) runs only
those (again where checked before).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GROUPS = ("metrics", "cells")
ALL = "all"
"""The group name that stands for every group."""
GROUP_MUTMUT_LISTS = ("also_copy", "do_not_mutate")
"""mutmut settings a group may add: files its tests need in the copy, files never mutated."""
KILLED = ("killed", "timeout")
"""mutmut statuses where a test noticed the mutant (a hang counts: the test did not pass)."""
MUTMUT_COPIES = frozenset({"tests", "test", "setup.cfg", "pyproject.toml", "uv.lock", "poetry.lock",
                           "Pipfile.lock", "pdm.lock"})
"""Top-level entries mutmut copies into `mutants/` by itself (besides the source paths)."""
NOT_CLONED = frozenset({".venv", "mutants", ".git"})
"""Top-level entries of a copy that are no part of the clone (the venv is a link to the tree's)."""
WORKERS_DIR = Path("/run/expaudit-workers")
"""Where root's sandboxes keep their workers' directories (`sandbox.workdir.RUN_BASE`)."""
NAMESPACE_INIT = """\
import os, signal, subprocess, sys
def stop(signum, frame):  # PID 1 of a namespace gets no default action: end it, and all in it
    sys.exit(128 + signum)
for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(signum, stop)  # a handler, not an ignore: mutmut and the tests get the default
workers, argv = sys.argv[1], sys.argv[2:]
os.makedirs(workers, mode=0o700, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "expaudit-mutation", workers], check=True)
child = subprocess.Popen(argv)
while True:  # PID 1 of the namespace: reap every orphan until mutmut ends
    pid, status = os.wait()
    if pid == child.pid:
        code = os.waitstatus_to_exitcode(status)
        sys.exit(code if code >= 0 else 128 - code)
"""
"""PID 1 of a contained group's namespace: its own tmpfs on `WORKERS_DIR`, then mutmut; a
SIGINT, SIGTERM or SIGHUP ends it, and with it every process of the namespace."""


def _groups(pyproject: dict) -> dict[str, dict]:
    return pyproject["tool"]["expaudit"]["mutation"]


def _toml(value) -> str:
    """A TOML value for the strings, numbers, booleans and lists the mutmut table holds."""
    return json.dumps(value)


def clone_entries(root: Path, source_paths: list[str]) -> list[str]:
    """The top-level entries of `root` that mutmut leaves out of `mutants/` unless listed in
    `also_copy`: all but whole source directories, its own copies and `NOT_CLONED`."""
    whole = {Path(p).parts[0] for p in source_paths if len(Path(p).parts) == 1}
    skip = whole | MUTMUT_COPIES | NOT_CLONED
    return sorted(p.name for p in root.iterdir() if p.name not in skip)


def _mutmut_table(base: dict, groups: list[dict], root: Path) -> str:
    """`[tool.mutmut]`: the shared settings plus the groups' files and (existing) test paths,
    and `also_copy` extended to the whole tree (`clone_entries`)."""
    tests = sorted({path for group in groups for pattern in group["tests"]
                    for path in glob.glob(pattern, root_dir=root)})
    if not tests:
        raise SystemExit("mutation_test: the chosen groups name no existing test file")
    table = {**base,
             "only_mutate": [p for group in groups for p in group["mutate"]],
             "pytest_add_cli_args_test_selection": tests}
    for key in GROUP_MUTMUT_LISTS:  # a group's own mutmut lists, joined
        joined = {v for group in groups for v in group.get(key, [])} | set(base.get(key, []))
        if key == "also_copy":
            joined |= set(clone_entries(root, base.get("source_paths", [])))
        if joined:
            table[key] = sorted(joined)
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


def _outside_the_tree(path: Path) -> Path:
    path = path.resolve()
    if path == REPO or REPO in path.parents:
        raise SystemExit(f"mutation_test: the scratch directory {path} is inside the working tree")
    return path


def _mutmut_argv(args: tuple[str, ...], contained: bool) -> list[str]:
    argv = [sys.executable, "-m", "mutmut", *args]
    if not contained:
        return argv
    return ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
            sys.executable, "-I", "-c", NAMESPACE_INIT, str(WORKERS_DIR), *argv]


def _mutmut(target: Path, *args: str, contained: bool = False,
            **kwargs) -> subprocess.CompletedProcess:
    target = _outside_the_tree(target)
    (target / "mutants").mkdir(exist_ok=True)  # on PYTHONPATH before mutmut fills it
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "PYTHONPATH": str(target / "mutants"), "TMPDIR": str(_tmp_dir(target))}
    return subprocess.run(_mutmut_argv(args, contained), cwd=target, env=env, text=True, **kwargs)


def _tmp_dir(target: Path) -> Path:
    tmp = target.parent / "tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    return tmp


def _counts(target: Path) -> tuple[dict[str, str], dict[str, int]]:
    listed = _mutmut(target, "results", "--all", "true", capture_output=True, check=True).stdout
    status = dict(line.strip().rsplit(": ", 1) for line in listed.splitlines() if ": " in line)
    counts: dict[str, int] = {}
    for value in status.values():
        counts[value] = counts.get(value, 0) + 1
    return status, counts


def _report(target: Path) -> tuple[str, bool]:
    """The group's report, and whether any mutant was checked at all."""
    status, counts = _counts(target)
    killed = sum(counts.get(s, 0) for s in KILLED)
    survived = counts.get("survived", 0)
    lines = [f"mutants: {len(status)}; " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
             f"score: {killed}/{killed + survived} killed"
             + (f" ({100 * killed / (killed + survived):.1f}%)" if killed + survived else "")]
    if not killed + survived:
        lines.append("ERROR: no mutant was checked: the group's tests fail on the unmutated copy "
                     "(mutmut's output above names them)")
    for name in sorted(n for n, s in status.items() if s == "survived"):
        diff = _mutmut(target, "show", name, capture_output=True).stdout
        changed = [line for line in diff.splitlines()
                   if line[:1] in "-+" and not line.startswith(("---", "+++"))]
        lines += ["", f"survived: {name}", *changed]
    return "\n".join(lines) + "\n", bool(killed + survived)


def missing_from_clone(target: Path) -> list[str]:
    """Files of the copy that are not in its `mutants/` clone (the tests may read them)."""
    missing = []
    for entry in sorted(target.iterdir()):
        if entry.name in NOT_CLONED:
            continue
        paths = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
        missing += [str(p.relative_to(target)) for p in paths
                    if not (target / "mutants" / p.relative_to(target)).exists()]
    return missing


def _frozen_changes(target: Path) -> list[str]:
    """Frozen-data files that differ between the copy and its `mutants/` directory."""
    frozen = target / "benchmark_data" / "frozen"
    changed = []
    for path in sorted(p for p in frozen.rglob("*") if p.is_file()):
        twin = target / "mutants" / path.relative_to(target)
        if not twin.is_file() or twin.read_bytes() != path.read_bytes():
            changed.append(str(path.relative_to(target)))
    return changed


def _run_group(base: Path, name: str, group: dict, max_children: int, *, resume: bool = False,
               mutants: tuple[str, ...] = ()) -> tuple[int, str]:
    target = base / name
    if not (resume and (target / "mutants").is_dir()):
        target.mkdir()
        _copy_tree(target)
        _write_config(target, [name])
    contained = bool(group.get("contained"))
    if contained and (os.geteuid() != 0 or shutil.which("unshare") is None):
        print(f"mutation_test: group {name}: not root (or no unshare): run without a namespace "
              f"of its own; its tests that need root are skipped", flush=True)
        contained = False
    print(f"mutation_test: group {name} in {target}"
          + (" (in a PID and mount namespace of its own)" if contained else ""), flush=True)
    run = _mutmut(target, "run", "--max-children", str(max_children), *mutants,
                  contained=contained)
    report, checked = _report(target)
    report = f"== {name}\n" + report
    missing = missing_from_clone(target)
    if missing:
        report += (f"WARNING: {len(missing)} files of the copy are missing from its mutants/ clone "
                   f"({', '.join(missing[:3])}): tests that read them failed for that reason\n")
    changed = _frozen_changes(target)
    if changed:
        report += (f"WARNING: a mutant changed the frozen data of this copy ({', '.join(changed[:3])}): "
                   "tests that read it afterwards may have failed for that reason\n")
    return run.returncode or (0 if checked else 1), report


def chosen_groups(names: list[str], known: dict[str, dict]) -> list[str]:
    """The groups to run, in order: `all` stands for every group; an unknown name is refused."""
    chosen = [n for name in names for n in (known if name == ALL else [name])]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise SystemExit(f"mutation_test: unknown group {unknown[0]!r}; groups: {', '.join(known)}, "
                         f"or {ALL}")
    return list(dict.fromkeys(chosen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", default=list(DEFAULT_GROUPS))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="scratch directory (created; must not exist; "
                                                  "outside the working tree)")
    parser.add_argument("--resume", action="store_true",
                        help="with --keep DIR that exists: go on in each group's copy there")
    parser.add_argument("--mutants", nargs="+", default=[], metavar="PATTERN",
                        help="only these mutants (mutmut's names; * is a wildcard)")
    args = parser.parse_args(argv)
    known = _groups(tomllib.loads((REPO / "pyproject.toml").read_text()))
    names = chosen_groups(args.groups, known)
    if args.resume and not args.keep:
        raise SystemExit("mutation_test: --resume goes on in a --keep DIR")
    if args.keep:
        base = _outside_the_tree(args.keep)
        base.mkdir(parents=True, exist_ok=args.resume)
    else:
        base = Path(tempfile.mkdtemp(prefix="expaudit-mutation-"))
    status, reports = 0, []
    for name in names:
        code, report = _run_group(base, name, known[name], args.max_children, resume=args.resume,
                                  mutants=tuple(args.mutants))
        status = status or code
        reports.append(report)
        (base / "report.txt").write_text("\n".join(reports))
        print(report, end="", flush=True)
    print(f"mutation_test: report in {base / 'report.txt'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
