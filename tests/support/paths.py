"""Where the tests find the repository and the test assets, whatever folder a test sits in."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository root: docs/, examples/, scripts/ and the packages."""

TESTS = REPO_ROOT / "tests"
HOSTILE_SELECTORS = TESTS / "hostile_selectors"
"""Selectors that attack the sandbox, one folder each."""

EXAMPLE_SELECTORS = REPO_ROOT / "examples" / "selectors"
"""The example selectors the documentation shows."""
