"""The example selectors compute exactly what their READMEs say, and ship a lintable Dockerfile.

They run here as plain processes on the demo /input (EXPAUDIT_INPUT /
EXPAUDIT_OUTPUT); tests/sandbox/test_local.py runs them inside the sandbox.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sandbox.protocol import read_output
from tests.support.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "selectors"
SELECTORS = ("raw32", "object-proximity")


DEMO_SIZES = dict(n_experiences=4, n_scenes=8, seed=5)
"""The demo /input of this module (the `demo` fixture): four experiences, eight scenes."""


def _run(name: str, input_dir: Path, out: Path):
    out.mkdir()
    env = {"PATH": os.environ["PATH"], "EXPAUDIT_INPUT": str(input_dir),
           "EXPAUDIT_OUTPUT": str(out)}
    subprocess.run([sys.executable, str(EXAMPLES / name / "selector.py")], env=env, check=True,
                   capture_output=True, timeout=60)
    setting = json.loads((input_dir / "setting.json").read_text())
    return read_output(out, setting["experience_ids"], setting["scene_ids"]).scores


def _pixels(path: Path) -> np.ndarray:
    image = Image.open(path).convert("RGB").resize((32, 32), Image.BILINEAR)
    return np.asarray(image, dtype=np.float64).reshape(-1) / 255.0


def test_raw32_is_minus_l2_of_32x32_rgb(demo, tmp_path):
    input_dir, setting = demo
    scores = _run("raw32", input_dir, tmp_path / "out")
    for i, experience in enumerate(setting.experience_ids):
        base = _pixels(input_dir / "library" / experience / "base.png")
        for q, scene in enumerate(setting.scene_ids):
            query = _pixels(input_dir / "scenes" / scene / "image.png")
            assert scores[i, q] == pytest.approx(-np.sqrt(((base - query) ** 2).sum()), rel=1e-12)
    assert scores.max() <= 0
    np.testing.assert_array_equal(scores.argmax(axis=0), np.arange(8) % 4)


def test_object_proximity_is_minus_summed_distance(demo, tmp_path):
    input_dir, setting = demo
    scores = _run("object-proximity", input_dir, tmp_path / "out")

    def positions(path: Path) -> dict:
        return json.loads(path.read_text())["object_positions"]

    for i, experience in enumerate(setting.experience_ids):
        base = positions(input_dir / "library" / experience / "meta.json")
        for q, scene in enumerate(setting.scene_ids):
            query = positions(input_dir / "scenes" / scene / "meta.json")
            expected = -sum(np.linalg.norm(np.subtract(query[n], base[n])) for n in sorted(base))
            assert scores[i, q] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(scores.argmax(axis=0), np.arange(8) % 4)


def test_object_proximity_scores_no_shared_object_lowest():
    proximity = runpy.run_path(str(EXAMPLES / "object-proximity" / "selector.py"),
                               run_name="object_proximity")  # no __pycache__ in the example
    assert proximity["score"]({"cubeA": [0, 0, 0]}, {"cubeB": [0, 0, 0]}) == -1e9
    assert proximity["score"]({"cubeA": [0, 0, 0]}, {"cubeA": [3, 4, 0]}) == -5.0


@pytest.mark.parametrize("name", SELECTORS)
def test_each_example_has_dockerfile_and_readme(name):
    folder = EXAMPLES / name
    dockerfile = (folder / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python", "/selector/selector.py"]' in dockerfile
    assert "USER 65534:65534" in dockerfile
    assert "EXPAUDIT_INPUT" in (folder / "README.md").read_text()
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed")
    lint = subprocess.run([hadolint, str(folder / "Dockerfile")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
