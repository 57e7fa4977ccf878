"""Imports of the project's own modules inside functions are few, counted, and explained.

A deferred import hides a dependency from the import contracts' reader and from whoever
reads the top of the file, so each one must be the boundary to an optional heavy
dependency (torch, numba, the simulator, a command group's handlers). The table below is
the whole list; docs/architecture.md ("Deferred imports") names every file of it with the
reason, and the number may only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import REPO_ROOT

PACKAGES = ("expaudit", "service", "simulator", "sandbox", "leaderboard", "benchmark_data")
CEILING = 20
"""At most this many, by the architecture step's acceptance (issue: 32 before it)."""

DEFERRED = {
    # Each command group loads its handlers when it runs: building the parser loads no
    # service, simulator or pandas (tests/expaudit/cli/test_startup.py).
    "expaudit/cli/audit.py": 1,
    "expaudit/cli/backup.py": 1,
    "expaudit/cli/data.py": 1,
    "expaudit/cli/data_handlers.py": 1,
    "expaudit/cli/readout.py": 1,
    "expaudit/cli/runner.py": 1,
    "expaudit/cli/sandbox.py": 1,
    "expaudit/cli/service.py": 1,
    # The readout banks' generation is loaded by the one handler that needs it.
    "expaudit/cli/data_sim_handlers.py": 1,
    # torch and the frozen policies' networks.
    "benchmark_data/generation/adopt_staging.py": 1,
    "benchmark_data/generation/door_revision.py": 1,
    "benchmark_data/generation/readout_features.py": 2,
    "leaderboard/rules/embeddings/policy_encoder.py": 1,
    "leaderboard/rules/embeddings/registry.py": 2,
    # numba, a `sim` dependency the web process does not carry.
    "leaderboard/rules/structural.py": 1,
}


def deferred_imports(root: Path) -> dict[str, int]:
    """Per file, the imports of the project's packages inside a function body."""
    counts: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            lines = set()
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                        names = [inner.module]
                    elif isinstance(inner, ast.Import):
                        names = [alias.name for alias in inner.names]
                    else:
                        continue
                    if any(name.split(".")[0] in PACKAGES for name in names):
                        lines.add(inner.lineno)
            if lines:
                counts[str(path.relative_to(root))] = len(lines)
    return counts


def test_deferred_imports_are_exactly_the_listed_ones():
    found = deferred_imports(REPO_ROOT)
    assert found == DEFERRED, (
        "deferred own-module imports changed: move a new one to the top of its file, or, if it "
        "guards an optional heavy dependency, list it here and in docs/architecture.md")


def test_deferred_imports_stay_under_the_ceiling():
    assert sum(DEFERRED.values()) <= CEILING


def test_docs_list_every_file_with_deferred_imports():
    text = (REPO_ROOT / "docs" / "architecture.md").read_text()
    section = re.search(r"\*\*Deferred imports\.\*\*(.*?)\n- \*\*", text, re.S)
    assert section, "docs/architecture.md lost its 'Deferred imports' paragraph"
    missing = [path for path in DEFERRED if f"`{path}`" not in section.group(1)]
    assert not missing, f"docs/architecture.md does not name {missing}"
    total = re.search(r"(\d+) imports of the project's own modules", section.group(1))
    assert total and int(total.group(1)) == sum(DEFERRED.values())
