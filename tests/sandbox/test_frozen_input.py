"""A frozen setting's /input tree: ids in order, positions from the layouts, no outcomes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from sandbox.demo import png_bytes
from service.catalog.selector_input import (TASK_SCHEMAS, door_positions,
                                             prepare_frozen_input, stack_positions,
                                             takes_selectors)
from sandbox.protocol import ProtocolError
from tests.support.paths import REPO_ROOT

query_sets = pytest.importorskip("benchmark_data.query_sets")
SETTING = "stack-replay-k3-orig"
EXAMPLES = REPO_ROOT / "examples" / "selectors"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    try:
        query_sets.read_scenes("stack-orig")
    except query_sets.QuerySetNotFoundError as exc:
        pytest.skip(str(exc))
    images = {}

    def image(key: str) -> bytes:  # distinct tiny images, so the ids must travel with them
        images[key] = png_bytes(np.full((4, 4, 3), len(images) % 256, dtype=np.uint8))
        return images[key]

    directory = tmp_path_factory.mktemp("frozen") / "input"
    info = prepare_frozen_input(directory, SETTING, scene_png=image, base_png=image)
    return directory, info, images


def test_ids_and_order_follow_the_frozen_tables(tree):
    directory, info, images = tree
    scenes = query_sets.read_scenes("stack-orig")
    assert info.experience_ids == ("stack-e000", "stack-e001", "stack-e002")
    assert info.scene_ids == tuple(scenes["scene_id"]) and len(info.scene_ids) == 200
    setting = json.loads((directory / "setting.json").read_text())
    assert setting["setting_id"] == SETTING and setting["k"] == 3 and setting["q"] == 200
    for scene_id in info.scene_ids[:5]:
        assert (directory / "scenes" / scene_id / "image.png").read_bytes() == images[scene_id]
    assert (directory / "library" / "stack-e002" / "base.png").read_bytes() == \
        images["stack-e002"]


def test_positions_come_from_the_layouts(tree):
    directory, info, _ = tree
    row = query_sets.read_scenes("stack-orig").iloc[7]
    meta = json.loads((directory / "scenes" / row["scene_id"] / "meta.json").read_text())
    assert meta["object_positions"]["cube_a"][:2] == [row["cube_a_x"], row["cube_a_y"]]
    assert meta["object_positions"]["cube_b"][:2] == [row["cube_b_x"], row["cube_b_y"]]
    assert meta["state_id"] == row["state_id"] and meta["layout_level"] == row["layout_level"]
    with np.load(directory / "library" / "stack-e000" / "trajectory.npz") as npz:
        assert npz["path"].shape[1] == 6


def test_obstacle_centre_sits_on_the_table():
    positions = stack_positions({"cube_a": [0.0, -0.07, 0.1], "cube_b": [0.0, 0.07, 0.0],
                                 "obstacle": [0.01, 0.0, 0.03, 0.01, 0.04]})
    assert positions["obstacle"] == [0.01, 0.0, pytest.approx(0.84)]
    assert positions["cube_a"] == [0.0, -0.07, pytest.approx(0.82)]


def test_no_outcome_reaches_the_tree(tree):
    directory, _, _ = tree
    names = {p.name for p in directory.rglob("*")}
    assert not [n for n in names if "outcome" in n or "cell" in n]
    for meta in directory.rglob("meta.json"):
        text = meta.read_text().lower()
        assert "success" not in text and "outcome" not in text


def test_a_task_without_a_schema_is_refused(tmp_path, monkeypatch):
    monkeypatch.delitem(TASK_SCHEMAS, "door")
    assert not takes_selectors("door-policy-k3-orig") and takes_selectors(SETTING)
    with pytest.raises(ProtocolError, match="setting 'door-policy-k3-orig': task 'door' has no"):
        prepare_frozen_input(tmp_path, "door-policy-k3-orig", scene_png=bytes, base_png=bytes)


def test_door_positions_put_the_door_base_and_the_obstacle_at_their_heights():
    positions = door_positions({"door": [-0.12, -0.35, -1.7], "hinge": 0.1, "latch": 0.0,
                                "obstacle": [-0.1, -0.06, 0.04, 0.02, 0.05]})
    assert positions["door"] == [-0.12, -0.35, pytest.approx(1.1)]  # yaw is not a height
    assert positions["obstacle"] == [-0.1, -0.06, pytest.approx(0.85)]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="the local sandbox needs root and unshare")
def test_object_proximity_runs_on_a_frozen_setting(tree, tmp_path):
    from sandbox.base import Limits, RunSpec, RunStatus
    from sandbox.execute import run_selector
    from sandbox.local import LocalSandbox

    directory, info, _ = tree
    (tmp_path / "out").mkdir()
    spec = RunSpec(image=str(EXAMPLES / "object-proximity"), input_dir=directory,
                   output_dir=tmp_path / "out", limits=Limits(wall_seconds=20))
    run = run_selector(LocalSandbox(), spec, info.experience_ids, info.scene_ids)
    assert run.result.status is RunStatus.OK, run.result.reason
    assert run.scores.scores.shape == (3, 200) and np.isfinite(run.scores.scores).all()
