"""Structural rules on hand-made layouts: object proximity and path clearance."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from leaderboard.structural import (NO_OBSTACLE_CLEARANCE, box_distance, object_proximity,
                                    path_clearance, stack_obstacles, stack_object_positions)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "selectors" / "object-proximity" / "selector.py"


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
    from leaderboard.structural import stack_retargeted_paths
    from runner.scenes import StackLayout
    from runner.stack_expert import PHASE_GRASP, PHASE_PLACE

    base = StackLayout((0.0, -0.07, 0.0), (0.0, 0.07, 0.0))
    query = StackLayout((0.05, -0.07, 0.0), (0.0, 0.12, 0.0))
    path = np.array([[0.0, -0.07, 0.9, 0.0, 1.0, PHASE_GRASP],
                     [0.0, 0.07, 0.9, 0.0, 1.0, PHASE_PLACE]])
    moved = stack_retargeted_paths([(base, path)], [query])[0][0]
    np.testing.assert_allclose(moved, [[0.05, -0.07, 0.9], [0.0, 0.12, 0.9]])
