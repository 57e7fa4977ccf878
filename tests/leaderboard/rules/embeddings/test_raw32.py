"""raw32 in-process scores equal the example container selector's, bit for bit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from leaderboard.rules.embeddings import embedding_scores
from leaderboard.rules.embeddings.raw32 import Raw32Encoder
from sandbox.protocol import read_output
from tests.support.paths import REPO_ROOT

SELECTOR = REPO_ROOT / "examples" / "selectors" / "raw32"


DEMO_SIZES = dict(n_experiences=4, n_scenes=8)
"""The demo /input of this module (the `demo` fixture)."""


@pytest.fixture(scope="module")
def raw32_scores(demo_images):
    """raw32's scores of the demo, computed in process."""
    return embedding_scores(Raw32Encoder(), *demo_images)


def test_in_process_scores_pick_the_demo_answer(demo, raw32_scores):
    (_, setting), scores = demo, raw32_scores
    assert scores.shape == (4, 8)
    assert list(np.argmax(scores, axis=0)) == [j % 4 for j in range(8)]


def test_selector_script_gives_identical_scores(demo, raw32_scores, tmp_path):
    (directory, setting), scores = demo, raw32_scores
    env = dict(os.environ, EXPAUDIT_INPUT=str(directory), EXPAUDIT_OUTPUT=str(tmp_path))
    subprocess.run([sys.executable, str(SELECTOR / "selector.py")], env=env, check=True)
    container = read_output(tmp_path, setting.experience_ids, setting.scene_ids)
    assert np.array_equal(container.scores, scores)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None
                    or shutil.which("setpriv") is None,
                    reason="the local sandbox needs root, unshare and setpriv")
def test_selector_in_local_sandbox_gives_identical_scores(demo, raw32_scores, tmp_path):
    from sandbox.base import RunSpec, RunStatus
    from sandbox.execute import run_selector
    from sandbox.local import LocalSandbox

    (directory, setting), scores = demo, raw32_scores
    spec = RunSpec(image=str(SELECTOR), input_dir=directory, output_dir=tmp_path)
    run = run_selector(LocalSandbox(), spec, setting.experience_ids, setting.scene_ids)
    assert run.result.status is RunStatus.OK, run.result.reason
    assert np.array_equal(run.scores.scores, scores)


def test_setting_scores_read_the_stored_image_tars(demo, raw32_scores, tmp_path):
    import tarfile
    from types import SimpleNamespace

    from leaderboard.rules.embeddings.setting_scores import image_rule_scores
    from leaderboard.matrix import SceneTable, TransferData

    (directory, setting), scores = demo, raw32_scores
    info = SimpleNamespace(id="demo", query_set="qs", library_id="lib")
    data = TransferData(setting.experience_ids,
                        SceneTable(setting.scene_ids, np.zeros(8, dtype=object), np.zeros(8), np.zeros(8)),
                        np.zeros((4, 8, 1), dtype=np.int8))
    result = image_rule_scores(info, data, tmp_path, names=("raw32", "resnet18"))
    assert result["raw32"] == "images missing: qs/images.tar is not in the frozen data"
    assert result["resnet18"].startswith("weights missing")
    for folder, tar_name, ids, sub, file in (
            ("query_sets/qs", "images.tar", setting.scene_ids, "scenes", "image.png"),
            ("libraries/lib", "base_images.tar", setting.experience_ids, "library", "base.png")):
        (tmp_path / folder).mkdir(parents=True)
        with tarfile.open(tmp_path / folder / tar_name, "w") as tar:
            for item in ids:
                tar.add(directory / sub / item / file, arcname=f"{item}.png")
    result = image_rule_scores(info, data, tmp_path, cache_dir=tmp_path / "cache", names=("raw32",))
    assert np.array_equal(result["raw32"], scores)
