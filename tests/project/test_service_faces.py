"""Each service subpackage is reached through its face: a module outside `service.<sub>`
imports `from service.<sub> import name`, never from a module inside it (docs/architecture.md,
"The service"). The face in `<sub>/__init__.py` is what the rest may rely on; the modules
behind it can move without their importers changing."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.support.paths import REPO_ROOT


def _packages() -> list[str]:
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["root_packages"]


def _imported(tree: ast.AST) -> list[str]:
    """The absolute modules named by every import in `tree` (the project imports absolutely)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def face_skipping_imports(root: Path, packages: list[str]) -> list[str]:
    """`file: module` for each import of a module inside a service subpackage
    (`service.<sub>.<module>`) by a file outside that subpackage."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            for module in _imported(ast.parse(path.read_text(), filename=str(path))):
                parts = module.split(".")
                if parts[0] != "service" or len(parts) < 3:
                    continue
                if relative.parts[:2] != ("service", parts[1]):
                    found.append(f"{relative}: {module}")
    return found


def test_service_subpackages_are_imported_through_their_faces():
    assert face_skipping_imports(REPO_ROOT, _packages()) == []


def test_the_check_sees_an_import_past_a_face(tmp_path):
    for folder in ("service/queues", "service/process", "expaudit"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "service/queues/jobs.py").write_text(
        "from service.process.redis_errors import tolerated\nfrom service.process import defaults\n"
        "from service.queues.rollout_jobs import Chunk\n")
    (tmp_path / "expaudit/cli.py").write_text("def main():\n    import service.queues.worker\n")
    assert face_skipping_imports(tmp_path, ["service", "expaudit"]) == [
        "service/queues/jobs.py: service.process.redis_errors",
        "expaudit/cli.py: service.queues.worker"]
