"""Building the `expaudit` parser stays light: `expaudit --help` and `--version` load no service,
runner, web, Redis, Docker or simulator module, nor the reference rules or the data generation.

Each group of subcommands registers its arguments with light imports only; its handlers load
what they need when an action runs. The numbers the help texts show are repeated in the parser
modules, so a test here checks that they agree with the modules that own them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from expaudit.cli import audit, sandbox
from leaderboard.metrics import defaults as audit_defaults
from runner.sandbox import defaults as sandbox_defaults

ROOT = Path(__file__).resolve().parents[1]

PROBE = (
    "import sys; from expaudit.cli import build_parser; build_parser(); "
    "print(sorted(m for m in sys.modules if m.split('.')[0] in "
    "{'service','runner','flask','redis','docker','numba','mujoco','torch','robosuite'} "
    "or m.startswith('leaderboard.rules') or m.startswith('benchmark_data.generation')))"
)


def test_building_the_parser_loads_no_heavy_module():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_defaults_in_the_help_are_the_audits_and_the_sandboxs():
    assert (audit.N_SHUFFLES, audit.N_BOOTSTRAP, audit.SEED) == (
        audit_defaults.N_SHUFFLES, audit_defaults.N_BOOTSTRAP, audit_defaults.SEED)
    assert (sandbox.WALL_SECONDS, sandbox.MEMORY_MB * sandbox_defaults.MIB, sandbox.PIDS,
            sandbox.CPUS) == (sandbox_defaults.WALL_SECONDS, sandbox_defaults.MEMORY_BYTES,
                              sandbox_defaults.PIDS, sandbox_defaults.CPUS)


def test_an_audit_loads_no_service_and_no_simulator():
    probe = PROBE.replace("build_parser(); ",
                          "build_parser(); import expaudit.cli.audit_handlers; ")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
