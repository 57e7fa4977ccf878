"""The ImageNet embedding rules' container selectors give the in-process scores, bit for bit.

`examples/selectors/mobilenet_v2` and `examples/selectors/efficientnet_lite0`
import the project's own `leaderboard.rules.embeddings`; each is run as a plain
script and inside the local sandbox (where the package is copied next to
`selector.py`, as in the Docker image) on the demo input, and its
scores.csv must equal `embedding_scores(load_encoder(rule), ...)` exactly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from leaderboard.rules.embeddings import NotComputed, embedding_scores, load_encoder
from sandbox.protocol import read_output
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
SELECTORS = REPO / "examples" / "selectors"
RULES = ("mobilenet_v2", "efficientnet_lite0")
N_EXPERIENCES, N_SCENES = 4, 8


def assemble_selector(rule: str, target: Path) -> Path:
    """A selector directory as the Docker image lays it out: selector.py + the embedding package."""
    shutil.copy2(SELECTORS / rule / "selector.py", target / "selector.py")
    package = target / "leaderboard" / "rules"
    package.mkdir(parents=True)
    for parent in (target / "leaderboard", package):  # empty, as in the image
        (parent / "__init__.py").touch()
    shutil.copytree(REPO / "leaderboard" / "rules" / "embeddings", package / "embeddings",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return target


DEMO_SIZES = dict(n_experiences=N_EXPERIENCES, n_scenes=N_SCENES)
"""The demo /input of this module (the `demo` fixture)."""



@pytest.fixture(scope="module", params=RULES)
def in_process(request, demo_images):
    """(rule, in-process (K, Q) scores); skipped only where the rule cannot run here."""
    encoder = load_encoder(request.param)
    if isinstance(encoder, NotComputed):
        pytest.skip(f"{request.param}: {encoder.message}")
    query, base = demo_images
    return request.param, embedding_scores(encoder, query, base)


def test_in_process_scores_pick_the_demo_answer(in_process):
    _, scores = in_process
    assert scores.shape == (N_EXPERIENCES, N_SCENES)
    assert np.all(np.abs(scores) <= 1.0 + 1e-12)
    assert list(np.argmax(scores, axis=0)) == [j % N_EXPERIENCES for j in range(N_SCENES)]


def test_selector_script_gives_identical_scores(demo, in_process, tmp_path):
    directory, setting = demo
    rule, scores = in_process
    env = dict(os.environ, EXPAUDIT_INPUT=str(directory), EXPAUDIT_OUTPUT=str(tmp_path))
    subprocess.run([sys.executable, str(SELECTORS / rule / "selector.py")], env=env, check=True)
    container = read_output(tmp_path, setting.experience_ids, setting.scene_ids)
    assert np.array_equal(container.scores, scores)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None
                    or shutil.which("setpriv") is None,
                    reason="the local sandbox needs root, unshare and setpriv")
def test_selector_in_local_sandbox_gives_identical_scores(demo, in_process, tmp_path):
    from sandbox.base import Limits, RunSpec, RunStatus
    from sandbox.execute import run_selector
    from sandbox.local import LocalSandbox

    directory, setting = demo
    rule, scores = in_process
    selector = tmp_path / "selector"
    selector.mkdir()
    output = tmp_path / "output"
    output.mkdir()
    # torch and a small CNN fit in 1 GiB of address space (RLIMIT_AS), a quarter of
    # the default limit; the wall limit is far above the few seconds a run takes.
    limits = Limits(wall_seconds=120, memory_bytes=1 << 30)
    spec = RunSpec(image=str(assemble_selector(rule, selector)), input_dir=directory,
                   output_dir=output, limits=limits)
    run = run_selector(LocalSandbox(), spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, (run.result.reason, run.result.stderr_tail)
    assert np.array_equal(run.scores.scores, scores)


def test_selector_with_missing_weights_exits_with_the_reason(demo, tmp_path):
    """No weights file: exit status 2, the reason on stderr, no scores.csv (nothing invented)."""
    directory, _ = demo
    env = dict(os.environ, EXPAUDIT_INPUT=str(directory), EXPAUDIT_OUTPUT=str(tmp_path),
               EXPAUDIT_MOBILENET_V2_WEIGHTS=str(tmp_path / "absent.pth"))
    done = subprocess.run([sys.executable, str(SELECTORS / "mobilenet_v2" / "selector.py")],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "mobilenet_v2 selector: not computed: weights missing: " \
        "EXPAUDIT_MOBILENET_V2_WEIGHTS" in done.stderr
    assert "absent.pth' is not a file" in done.stderr
    assert not (tmp_path / "scores.csv").exists()


@pytest.mark.parametrize("rule", RULES)
def test_dockerfile_copies_what_the_test_assembles_and_lints(rule):
    """The image holds the same files as the sandbox test's directory; hadolint passes."""
    dockerfile = (SELECTORS / rule / "Dockerfile").read_text()
    copies = [line.split()[1:] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert copies == [["leaderboard/rules/embeddings/", "/selector/leaderboard/rules/embeddings/"],
                      [f"examples/selectors/{rule}/selector.py", "/selector/selector.py"]]
    assert ("RUN touch /selector/leaderboard/__init__.py /selector/leaderboard/rules/__init__.py"
            in dockerfile)
    assert all((REPO / source).exists() for source, _ in copies)
    ignore = (SELECTORS / rule / "Dockerfile.dockerignore").read_text().splitlines()
    assert all(f"!{source}" in ignore for source, _ in copies)
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed")
    lint = subprocess.run([hadolint, str(SELECTORS / rule / "Dockerfile")], capture_output=True,
                          text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
