"""No test module imports another (docs/testing.md, "Where the tests are"): a helper that two
test modules share lives in tests/support/, a fixture in a conftest.py. An import of a test
module runs its tests twice and ties one test file's helpers to another's tests."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def _imported_modules(tree: ast.AST, package: str) -> set[str]:
    """Every module an `import` or `from ... import` anywhere in `tree` names, the names
    imported from a package included (they may be modules)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _test_module(module: str) -> str | None:
    """The test module that `module` is or lies in (`tests.e2e.test_deploy` for
    `tests.e2e.test_deploy.compose`), or None."""
    parts = module.split(".")
    if parts[0] != "tests":
        return None
    for depth, part in enumerate(parts[1:], start=2):
        if part.startswith("test_"):
            return ".".join(parts[:depth])
    return None


def imports_of_test_modules(tests_root: Path = TESTS) -> list[str]:
    """`file: module` for each import of a test module by a file under `tests_root`."""
    found = []
    for path in sorted(tests_root.rglob("*.py")):
        relative = path.relative_to(tests_root.parent)
        package = ".".join(relative.parent.parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        modules = {_test_module(module) for module in _imported_modules(tree, package)} - {None}
        found += [f"{relative}: {module}" for module in sorted(modules)]
    return found


def test_no_test_module_imports_another():
    assert imports_of_test_modules() == []


def test_the_check_sees_an_import_of_a_test_module(tmp_path):
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_deploy.py").write_text("ROLES = ()\n")
    (tmp_path / "tests" / "e2e" / "test_other.py").write_text(
        "def test_roles():\n    from tests.e2e.test_deploy import ROLES\n")
    (tmp_path / "tests" / "e2e" / "test_third.py").write_text("from . import test_deploy\n")
    (tmp_path / "tests" / "e2e" / "test_fine.py").write_text("from tests.support.paths import REPO_ROOT\n")
    assert imports_of_test_modules(tmp_path / "tests") == [
        "tests/e2e/test_other.py: tests.e2e.test_deploy",
        "tests/e2e/test_third.py: tests.e2e.test_deploy"]
