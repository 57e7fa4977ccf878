"""The web service, the job worker and the command import with the core install alone: the
simulator (robosuite, MuJoCo, numba) and torch are optional extras, loaded only by the parts
that run rollouts, train or embed images."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
OPTIONAL = ("robosuite", "mujoco", "numba", "torch", "torchvision", "robomimic", "h5py")

PROBE = """
import sys
for name in {optional!r}:
    sys.modules[name] = None  # importing it now fails, as in an install without the extras
import {module}
print("imported")
"""


@pytest.mark.parametrize("module", [
    "service.web.app", "service.queues.worker", "service.queues.jobs", "service.submissions.publishing",
    "service.selectors.run", "leaderboard.rules.baselines", "expaudit.cli",
])
def test_imports_without_the_optional_extras(module):
    done = subprocess.run([sys.executable, "-c", PROBE.format(optional=OPTIONAL, module=module)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "imported" in done.stdout, (
        f"{module} needs an optional extra at import:\n{done.stderr[-2000:]}")
