"""The mutation-testing groups (pyproject.toml) name real files, and the scratch config is valid."""

from __future__ import annotations

import glob
import importlib.util
import tomllib

import pytest

from tests.servers import REPO_ROOT


@pytest.fixture(scope="module")
def driver():
    spec = importlib.util.spec_from_file_location("mutation_test", REPO_ROOT / "scripts" / "mutation_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_group_mutates_and_tests_existing_files():
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    groups = pyproject["tool"]["expaudit"]["mutation"]
    assert {"metrics", "cells", "auth", "sealed", "uploads", "sandbox"} <= set(groups)
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
        '[tool.mutmut]\nsource_paths = ["runner/"]\n\n'
        '[tool.expaudit.mutation.sandbox]\nmutate = ["runner/sandbox/base.py"]\n'
        'tests = ["tests/test_sandbox_*.py"]\nalso_copy = ["examples/"]\n'
        'do_not_mutate = ["runner/sandbox/nsinit.py"]\n')
    driver._write_config(tmp_path, ["sandbox"])
    table = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert (table["also_copy"], table["do_not_mutate"]) == (["examples/"], ["runner/sandbox/nsinit.py"])


def test_a_group_that_can_harm_the_machine_runs_only_when_asked(driver):
    with pytest.raises(SystemExit, match="'sandbox-isolation' runs mutants that can harm this machine"):
        driver.main(["sandbox-isolation"])
