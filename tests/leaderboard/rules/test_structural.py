"""Structural rules on hand-made layouts: object proximity and path clearance."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from leaderboard.rules.structural import (NO_OBSTACLE_CLEARANCE, box_distance, object_proximity,
                                    path_clearance, stack_obstacles, stack_object_positions)
from tests.support.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "selectors" / "object-proximity" / "selector.py"


def test_object_proximity_prefers_the_nearest_base_scene():
    query = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])              # Q=1, M=2
    base = np.array([[[0.0, 0.3, 0.0], [1.0, 0.4, 0.0]],                 # distances 0.3 + 0.4
                     [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5]]])                # distances 0 + 0.5
    scores = object_proximity(query, base)
    np.testing.assert_allclose(scores, [[-0.7], [-0.5]])
    assert int(np.argmax(scores[:, 0])) == 1


def test_object_proximity_matches_the_example_selector():
    spec = importlib.util.spec_from_file_location("object_proximity_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(3)
    query, base = rng.uniform(-0.2, 0.2, (4, 2, 3)), rng.uniform(-0.2, 0.2, (3, 2, 3))
    scores = object_proximity(query, base)
    for i in range(3):
        for q in range(4):
            named = lambda a: {"cubeA": list(a[0]), "cubeB": list(a[1])}  # noqa: E731
            assert scores[i, q] == pytest.approx(example.score(named(query[q]), named(base[i])), abs=1e-12)


def test_object_proximity_rejects_mismatched_objects():
    with pytest.raises(ValueError, match=r"got query \(1, 2, 3\), base \(1, 3, 3\)"):
        object_proximity(np.zeros((1, 2, 3)), np.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        object_proximity(np.full((1, 2, 3), np.nan), np.zeros((1, 2, 3)))


def test_box_distance_outside_edge_corner_and_inside():
    center, half = np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    points = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [2.0, 2.0, 1.0], [0.5, 0.0, 1.0]])
    np.testing.assert_allclose(box_distance(points, center, half), [0.0, 2.0, np.sqrt(2), 0.0])


def test_path_clearance_prefers_the_path_that_stays_away():
    # one obstacle at the origin (half size 0.1), scene 1 has none
    obstacles = np.array([[0.0, 0.0, 0.0, 0.1, 0.1, 0.1], [np.nan] * 6])
    close = np.array([[-1.0, 0.0, 0.2], [0.0, 0.0, 0.2], [1.0, 0.0, 0.2]])   # passes 0.1 above
    far = np.array([[-1.0, 0.0, 0.5], [0.0, 0.0, 0.5], [1.0, 0.0, 0.5]])     # passes 0.4 above
    through = np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.05, 0.0]])  # ends inside
    scores = path_clearance([[close, close], [far, far], [through, through]], obstacles)
    np.testing.assert_allclose(scores[:, 0], [0.1, 0.4, 0.0])
    assert (scores[:, 1] == NO_OBSTACLE_CLEARANCE).all()
    assert int(np.argmax(scores[:, 0])) == 1


def test_path_clearance_errors_name_the_bad_input():
    path = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"obstacles must have shape \(Q, 6\) = \(1, 6\)"):
        path_clearance([[path]], np.zeros((2, 6)))
    with pytest.raises(ValueError, match=r"paths\[1\] has 2 scenes, paths\[0\] has 1"):
        path_clearance([[path], [path, path]], np.zeros((1, 6)))
    with pytest.raises(ValueError, match=r"paths\[0\]\[0\] must be \(T, 3\)"):
        path_clearance([[np.zeros((2, 2))]], np.zeros((1, 6)))
    with pytest.raises(ValueError, match="obstacles row 0 is partly NaN"):
        path_clearance([[path]], np.array([[0.0, np.nan, 0, 0, 0, 0]]))


def test_stack_layout_arrays():
    layouts = [{"cube_a": [0.1, 0.2, 0.0], "cube_b": [0.3, 0.4, 0.1], "obstacle": None},
               {"cube_a": [0.0, 0.0, 0.0], "cube_b": [0.0, 0.1, 0.0],
                "obstacle": [0.0, 0.05, 0.03, 0.01, 0.02]}]
    positions = stack_object_positions(layouts)
    assert positions.shape == (2, 2, 3)
    np.testing.assert_allclose(positions[0, :, :2], [[0.1, 0.2], [0.3, 0.4]])
    assert positions[0, 0, 2] == positions[1, 0, 2]          # resting height, not the yaw
    obstacles = stack_obstacles(layouts)
    assert np.isnan(obstacles[0]).all()
    np.testing.assert_allclose(obstacles[1], [0.0, 0.05, 0.8 + 0.02, 0.03, 0.01, 0.02])
    with pytest.raises(ValueError, match="layout 0: field 'cube_b' is missing"):
        stack_object_positions([{"cube_a": [0, 0, 0]}])


def test_stack_retargeted_paths_follow_the_query_cubes():
    pytest.importorskip("numba")
    from leaderboard.rules.structural import stack_retargeted_paths
    from simulator.stack_scenes import StackLayout
    from simulator.stack_expert import PHASE_GRASP, PHASE_PLACE

    base = StackLayout((0.0, -0.07, 0.0), (0.0, 0.07, 0.0))
    query = StackLayout((0.05, -0.07, 0.0), (0.0, 0.12, 0.0))
    path = np.array([[0.0, -0.07, 0.9, 0.0, 1.0, PHASE_GRASP],
                     [0.0, 0.07, 0.9, 0.0, 1.0, PHASE_PLACE]])
    moved = stack_retargeted_paths([(base, path)], [query])[0][0]
    np.testing.assert_allclose(moved, [[0.05, -0.07, 0.9], [0.0, 0.12, 0.9]])


def _frozen_root(tmp_path):
    """A tiny frozen root: 2 experiences of stream 'stack-stream', 2 states x 2 draws."""
    import json
    from types import SimpleNamespace

    import pandas as pd

    from leaderboard.matrix import SceneTable, TransferData

    lib = tmp_path / "libraries" / "stack-stream"
    lib.mkdir(parents=True)
    path = np.array([[0.0, -0.07, 0.9, 0.0, 1.0, 1], [0.0, 0.07, 0.9, 0.0, 1.0, 3]])
    bases = [{"cube_a": [0.0, -0.07, 0.0], "cube_b": [0.0, 0.07, 0.0], "obstacle": None},
             {"cube_a": [0.1, -0.07, 0.0], "cube_b": [0.1, 0.07, 0.0], "obstacle": None}]
    pd.DataFrame({"experience_id": ["x-e0", "x-e1"], "base_layout": [json.dumps(b) for b in bases],
                  "path": [path.reshape(-1).tolist()] * 2, "path_len": [2, 2]}).to_parquet(
        lib / "experiences.parquet")
    states = [{"cube_a": [0.0, -0.07, 0.0], "cube_b": [0.0, 0.07, 0.0], "obstacle": None},
              {"cube_a": [0.0, -0.07, 0.0], "cube_b": [0.0, 0.07, 0.0],
               "obstacle": [0.0, 0.0, 0.01, 0.01, 0.05]}]
    rows = [{"scene_id": f"s{j}-d{d}", "state_id": f"s{j}", "layout_level": 3 * j, "appearance_draw": d,
             "layout": json.dumps(states[j])} for j in range(2) for d in range(2)]
    qs = tmp_path / "query_sets" / "qs"
    qs.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(qs / "scenes.parquet")
    setting = SimpleNamespace(id="x", task="stack", query_set="qs", library_id="stack-stream")
    scenes = SceneTable(tuple(r["scene_id"] for r in rows), np.array([r["state_id"] for r in rows], dtype=object),
                        np.array([r["layout_level"] for r in rows]), np.array([r["appearance_draw"] for r in rows]))
    data = TransferData(("x-e0", "x-e1"), scenes, np.ones((2, 4, 1), dtype=np.int8))
    return setting, data


def test_structural_rule_scores_from_frozen_tables(tmp_path):
    pytest.importorskip("numba")
    from leaderboard.rules.structural import structural_rule_scores

    setting, data = _frozen_root(tmp_path)
    scores = structural_rule_scores(setting, data, tmp_path)
    np.testing.assert_allclose(scores["object_proximity"][:, 0], [0.0, -0.2])
    clearance = scores["path_clearance"]
    assert (clearance[:, :2] == NO_OBSTACLE_CLEARANCE).all()        # state s0: no obstacle
    assert clearance[0, 2] == clearance[0, 3]                      # draws of a state share it
    # both paths are retargeted onto the query cubes; their points (y = -0.07 and 0.07,
    # at the obstacle's top height) are 0.06 from its faces at y = -0.01 and 0.01
    np.testing.assert_allclose(clearance[:, 2], [0.06, 0.06], atol=1e-12)
    door = structural_rule_scores(type(setting)(id="d", task="door"), data, tmp_path)
    assert "door task's layouts" in door["path_clearance"]


def test_structural_rule_scores_reject_a_different_scene_order(tmp_path):
    pytest.importorskip("numba")
    from dataclasses import replace

    from leaderboard.rules.structural import structural_rule_scores

    setting, data = _frozen_root(tmp_path)
    reordered = replace(data, scenes=replace(data.scenes, scene_ids=data.scenes.scene_ids[::-1]))
    with pytest.raises(ValueError, match="scene order of qs/scenes.parquet differs"):
        structural_rule_scores(setting, reordered, tmp_path)
