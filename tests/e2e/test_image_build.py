"""The Dockerfile builds from a clean slim base, and the images are what it says.

Built with the test engine (tests/support/engine/podman.py) on the `python:3.11-slim`
stand-in (Debian 12's Python 3.11 from debootstrap: no compiler, Python's
headers, as in the slim image). Layers are cached in the engine's store, so
only a changed source rebuilds the project layer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.engine.fixtures import build_image, engine_or_skip, reporter_log
from tests.support.engine.standins import python_base
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
APP = "localhost/expaudit:e2e"  # the tag the compose test runs too
GPU_OPT_IN = "EXPAUDIT_TEST_GPU_IMAGE"


@pytest.fixture(scope="module")
def engine(request):
    engine = engine_or_skip(request.config)
    python_base(engine, reporter_log(request.config))
    return engine


@pytest.fixture(scope="module")
def app_image(engine, request) -> str:
    build_image(engine, ROOT, APP, reporter_log(request.config), target="app")
    return APP


def _run(engine, image: str, *command: str, entrypoint: str | None = None) -> str:
    """Run a command through the image's entrypoint (which runs any unknown command as
    given), or through `entrypoint` for a stage that has none of its own."""
    chosen = ["--entrypoint", entrypoint] if entrypoint else []
    done = engine.podman("run", "--rm", *chosen, image, *command, check=False, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_app_image_has_no_compiler_and_imports_the_simulator(engine, app_image):
    out = _run(engine, app_image, "sh", "-c",
               "for c in gcc cc g++ make; do command -v $c && echo FOUND $c; done; id -u; id -g; "
               "python -c 'import evdev, mujoco, robosuite, service.web.app; print(\"imports ok\")'")
    assert "FOUND" not in out, out
    assert out.splitlines()[:2] == ["10001", "10001"], out
    assert "imports ok" in out


def test_app_image_steps_a_robosuite_environment(engine, app_image):
    """MuJoCo and robosuite work in the image as the runner role uses them (headless EGL)."""
    out = _run(engine, app_image, "python", "-c",
               "import robosuite as suite\n"
               "env = suite.make('Lift', robots='Panda', has_renderer=False,\n"
               "                 has_offscreen_renderer=False, use_camera_obs=False)\n"
               "env.reset()\n"
               "obs, reward, done, info = env.step([0.0] * env.action_dim)\n"
               "print('stepped', sorted(obs)[:1])\n")
    assert "stepped" in out, out


def test_app_image_roles_run_through_the_entrypoint(engine, app_image):
    out = _run(engine, app_image, "expaudit", "--help")
    assert "usage: expaudit" in out
    # the frozen data ships inside the installed package and the seed role copies it
    out = _run(engine, app_image, "sh", "-c",
               "EXPAUDIT_FROZEN_ROOT=/tmp/frozen /usr/local/lib/expaudit/entrypoint.sh seed "
               "&& ls /tmp/frozen && cat /tmp/frozen/.seeded")
    assert "manifest.json" in out and "seeded from /usr/local/lib/python3.11/" in out, out


def test_the_compiler_stage_builds_the_source_only_wheels(engine, request):
    """`wheels` resolves every extra of both images (the GPU runner's CUDA torch included,
    metadata only) and builds what PyPI ships only as source."""
    tag = "localhost/expaudit-build/wheels:test"
    build_image(engine, ROOT, tag, reporter_log(request.config), target="wheels")
    out = _run(engine, tag, "/wheels", entrypoint="ls")
    assert any(name.startswith("evdev-") and name.endswith(".whl") for name in out.split()), out


def test_gpu_runner_stage_builds(engine, request):
    """The runner-gpu stage needs PyPI's CUDA torch and its nvidia-* wheels: gigabytes
    of download, so it is built only on request (set EXPAUDIT_TEST_GPU_IMAGE=1)."""
    if os.environ.get(GPU_OPT_IN) != "1":
        pytest.skip(f"the CUDA wheels of runner-gpu are a multi-gigabyte download; "
                    f"{GPU_OPT_IN}=1 builds the stage")
    tag = "localhost/expaudit-runner:gpu-test"
    build_image(engine, ROOT, tag, reporter_log(request.config), target="runner-gpu", timeout=3600)
    out = _run(engine, tag, "python", "-c", "import torch; print(torch.version.cuda)")
    assert out.strip() and out.strip() != "None"
