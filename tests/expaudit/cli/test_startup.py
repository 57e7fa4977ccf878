"""Building the `expaudit` parser stays light: `expaudit --help` and `--version` load no service,
runner, web, Redis, Docker or simulator module, nor the reference rules or the data generation.

Each group of subcommands registers its arguments with light imports only; its handlers load
what they need when an action runs. The defaults the help texts show come from the modules that
own them (the metrics' and the sandbox's constants), which load nothing heavy.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT

LIGHT = ("sandbox", "sandbox.defaults")
"""Packages whose import is cheap: the sandbox's limits the help shows."""
HEAVY = ("service", "simulator", "sandbox", "flask", "redis", "docker", "numba", "mujoco", "torch", "robosuite")


def _probe(load: str, heavy: tuple[str, ...]) -> list[str]:
    """The heavy modules loaded by `load` in a fresh interpreter."""
    code = (f"import sys; {load}; "
            f"print(sorted(m for m in sys.modules if (m.split('.')[0] in {set(heavy)!r} "
            "or m.startswith('leaderboard.rules') or m.startswith('benchmark_data.generation')) "
            f"and m not in {LIGHT!r}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return ast.literal_eval(done.stdout.strip())


def test_building_the_parser_loads_no_heavy_module():
    assert _probe("from expaudit.cli import build_parser; build_parser()",
                  HEAVY + ("pandas",)) == []


def test_an_audit_loads_no_service_and_no_simulator():
    assert _probe("from expaudit.cli import build_parser; build_parser(); "
                  "import expaudit.cli.audit_handlers", HEAVY) == []
