"""The mutation-testing groups (pyproject.toml) name real files, the scratch config is valid,
the scratch clone holds what the tests read, and nothing runs in the working tree."""

from __future__ import annotations

import glob
import importlib.util
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from sandbox.workdir import RUN_BASE
from tests.support.paths import REPO_ROOT


@pytest.fixture(scope="module")
def driver():
    spec = importlib.util.spec_from_file_location("mutation_test", REPO_ROOT / "scripts" / "mutation_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def test_every_group_mutates_and_tests_existing_files():
    groups = _pyproject()["tool"]["expaudit"]["mutation"]
    assert {"metrics", "cells", "auth", "sealed", "uploads", "sandbox", "sandbox-isolation"} <= set(groups)
    for name, group in groups.items():
        for pattern in group["mutate"]:
            assert glob.glob(pattern.replace("/*", "/*.py"), root_dir=REPO_ROOT), f"{name}: {pattern}"
        assert any(glob.glob(p, root_dir=REPO_ROOT) for p in group["tests"]), name


def test_the_scratch_config_replaces_the_mutmut_table(driver, tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_cells_x.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["benchmark_data/"]\nonly_mutate = ["x.py"]\n\n'
        '[tool.expaudit.mutation.cells]\nmutate = ["benchmark_data/cells.py"]\n'
        'tests = ["tests/test_cells_*.py", "tests/test_absent.py"]\n')
    driver._write_config(tmp_path, ["cells"])
    table = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert table == {"source_paths": ["benchmark_data/"], "only_mutate": ["benchmark_data/cells.py"],
                     "pytest_add_cli_args_test_selection": ["tests/test_cells_x.py"]}
    with pytest.raises(SystemExit, match="unknown group 'nope'; groups: cells"):
        driver._write_config(tmp_path, ["nope"])


def test_a_groups_own_mutmut_lists_join_the_scratch_config(driver, tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sandbox_x.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["simulator/"]\n\n'
        '[tool.expaudit.mutation.sandbox]\nmutate = ["sandbox/base.py"]\n'
        'tests = ["tests/test_sandbox_*.py"]\nalso_copy = ["examples/"]\n'
        'do_not_mutate = ["sandbox/nsinit.py"]\n')
    driver._write_config(tmp_path, ["sandbox"])
    table = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert (table["also_copy"], table["do_not_mutate"]) == (["examples/"], ["sandbox/nsinit.py"])


# ------------------------------------------------------------------ a whole clone


def test_the_scratch_clone_gets_every_top_level_entry_mutmut_would_leave_out(driver, tmp_path):
    for name in ("docs", "examples", "simulator", "tests", ".ci", ".venv", "mutants"):
        (tmp_path / name).mkdir()
    for name in ("pyproject.toml", "Makefile", "README.md", "compose.yaml"):
        (tmp_path / name).write_text("")
    assert driver.clone_entries(tmp_path, ["simulator/", "sandbox/"]) == [
        ".ci", "Makefile", "README.md", "compose.yaml", "docs", "examples"]
    # a source path below the top level copies only part of it: the rest must be copied too
    assert "simulator" in driver.clone_entries(tmp_path, ["sandbox/"])


def _clean_clone_entries() -> set[str]:
    """The top-level entries of a clean clone: every tracked file's first part."""
    listed = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, check=True, capture_output=True,
                            text=True).stdout.splitlines()
    return {Path(line).parts[0] for line in listed}


def _cloned(driver, group: dict) -> set[str]:
    """The top-level entries mutmut puts in `mutants/` for `group` (in the tree as it is)."""
    pyproject = _pyproject()
    table = tomllib.loads(driver._mutmut_table(pyproject["tool"]["mutmut"], [group], REPO_ROOT))
    mutmut = table["tool"]["mutmut"]
    return ({Path(p).parts[0] for p in mutmut["source_paths"] + mutmut.get("also_copy", [])}
            | driver.MUTMUT_COPIES)


def test_every_groups_scratch_copy_holds_a_clean_clone(driver):
    """What a clean clone holds (docs/, examples/, scripts/, the compose files...) is in every
    group's mutants/ directory, where its tests run."""
    clone = _clean_clone_entries()
    assert {"docs", "examples", "scripts", "benchmark_data", "tests", "pyproject.toml"} <= clone
    for name, group in _pyproject()["tool"]["expaudit"]["mutation"].items():
        assert clone - _cloned(driver, group) == set(), name


def test_what_the_tests_open_in_the_tree_is_in_the_scratch_copy(driver):
    """Every `REPO_ROOT / "x"` (or `REPO`, `ROOT`, `parents[1]`) a test names is copied: a test
    that reads docs/policy_settings.md once failed every mutant of the cells group."""
    pattern = re.compile(r'(?:REPO_ROOT|REPO|ROOT|parents\[1\]|parent\.parent)\s*/\s*"([^"/]+)')
    named = {match for path in (REPO_ROOT / "tests").rglob("*.py")
             for match in pattern.findall(path.read_text())}
    assert {"docs", "examples"} <= named
    clone = _cloned(driver, _pyproject()["tool"]["expaudit"]["mutation"]["cells"])
    assert {n for n in named if (REPO_ROOT / n).exists()} - clone == set()


def test_files_missing_from_the_mutants_clone_are_found(driver, tmp_path):
    for path in ("docs/a.md", "tests/test_x.py", "mutants/tests/test_x.py", ".venv/bin/python",
                 "README.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert driver.missing_from_clone(tmp_path) == ["README.md", "docs/a.md"]


# ------------------------------------------------------------------ never in the tree


def test_all_runs_every_group_once_in_order(driver):
    known = {"metrics": {}, "cells": {}, "sandbox": {}}
    assert driver.chosen_groups(["all"], known) == ["metrics", "cells", "sandbox"]
    assert driver.chosen_groups(["cells", "all"], known) == ["cells", "metrics", "sandbox"]
    with pytest.raises(SystemExit, match="unknown group 'nope'; groups: metrics, cells, sandbox, or all"):
        driver.chosen_groups(["nope"], known)


def test_mutmut_runs_in_the_scratch_copy_and_its_subprocesses_import_the_copy(driver, tmp_path,
                                                                             monkeypatch):
    calls = []
    monkeypatch.setattr(driver.subprocess, "run", lambda argv, **kw: calls.append((argv, kw)))
    target = tmp_path / "cells"
    target.mkdir()
    driver._mutmut(target, "run")
    argv, kwargs = calls[0]
    assert argv[1:] == ["-m", "mutmut", "run"] and kwargs["cwd"] == target.resolve()
    assert kwargs["env"]["PYTHONPATH"] == str(target.resolve() / "mutants")
    assert kwargs["env"]["TMPDIR"] == str(tmp_path.resolve() / "tmp")
    for inside in (REPO_ROOT, REPO_ROOT / "mutants", REPO_ROOT / "tests" / "x"):
        with pytest.raises(SystemExit, match="is inside the working tree"):
            driver._mutmut(inside, "run")
    with pytest.raises(SystemExit, match="is inside the working tree"):
        driver.main(["cells", "--keep", str(REPO_ROOT / "scratch")])
    assert len(calls) == 1 and not (REPO_ROOT / "scratch").exists()


def test_a_contained_group_runs_in_a_pid_and_mount_namespace_of_its_own(driver):
    """The sandbox groups' mutants run hostile selectors with a limit dropped and reap
    sandboxes: in a namespace of their own they can signal no process of the host and see
    their own, empty directory of root's sandbox records."""
    groups = _pyproject()["tool"]["expaudit"]["mutation"]
    assert groups["sandbox-isolation"]["contained"] is True and groups["sandbox"]["contained"] is True
    assert driver.WORKERS_DIR == RUN_BASE
    argv = driver._mutmut_argv(("run",), True)
    assert argv[:6] == ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
    assert argv[-5:] == [str(RUN_BASE), driver.sys.executable, "-m", "mutmut", "run"]
    assert "mount" in argv[argv.index("-c") + 1] and "os.wait()" in argv[argv.index("-c") + 1]
    assert driver._mutmut_argv(("run",), False) == [driver.sys.executable, "-m", "mutmut", "run"]


def test_a_stopped_group_goes_on_in_its_copy(driver, tmp_path, monkeypatch):
    """`--resume` runs mutmut again in the copy a stopped run left (no new copy, so the
    mutants checked there stand); `--mutants` hands mutmut the names to run."""
    copies, runs = [], []
    monkeypatch.setattr(driver, "_copy_tree", lambda target: copies.append(target))
    monkeypatch.setattr(driver, "_write_config", lambda target, names: None)
    monkeypatch.setattr(driver, "_mutmut", lambda target, *args, **kw: runs.append(args)
                        or subprocess.CompletedProcess(args, 0))
    monkeypatch.setattr(driver, "_report", lambda target: ("score: 1/1 killed\n", True))
    (tmp_path / "cells" / "mutants").mkdir(parents=True)
    code, report = driver._run_group(tmp_path, "cells", {}, 2, resume=True,
                                     mutants=("benchmark_data.cells.x__lock*",))
    assert (code, copies) == (0, [])
    assert runs == [("run", "--max-children", "2", "benchmark_data.cells.x__lock*")]
    with pytest.raises(FileExistsError):  # without --resume a group's copy is always new
        driver._run_group(tmp_path, "cells", {}, 2)
    with pytest.raises(SystemExit, match="--resume goes on in a --keep DIR"):
        driver.main(["cells", "--resume"])


def test_a_group_where_no_mutant_was_checked_is_an_error(driver, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "_counts", lambda target: (
        {"m1": "not checked", "m2": "not checked"}, {"not checked": 2}))
    report, checked = driver._report(tmp_path)
    assert not checked
    assert report.splitlines() == [
        "mutants: 2; not checked 2", "score: 0/0 killed",
        "ERROR: no mutant was checked: the group's tests fail on the unmutated copy (mutmut's "
        "output above names them)"]
