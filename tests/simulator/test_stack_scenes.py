"""Stack layouts: levels, ranges, determinism of query sets, round trips."""

import numpy as np
import pytest

from simulator.stack_scenes import (
    MAX_DISPLACEMENT, MIN_SEPARATION, NOMINAL_A, NOMINAL_B, N_STATES_PER_LEVEL, StackLayout,
    query_states, sample_layout,
)


def test_query_set_has_ten_states_per_level_and_is_reproducible():
    first = query_states("stack-orig")
    again = query_states("stack-orig")
    assert len(first) == 4 * N_STATES_PER_LEVEL
    assert [s.layout_level for s in first] == [lv for lv in range(4) for _ in range(N_STATES_PER_LEVEL)]
    assert first == again
    assert len({s.state_id for s in first}) == len(first)


def test_query_sets_differ():
    orig = {s.layout.key() for s in query_states("stack-orig")}
    fresh = {s.layout.key() for s in query_states("stack-fresh")}
    assert not orig & fresh


def test_level_ranges():
    rng = np.random.default_rng(3)
    for _ in range(50):
        one = sample_layout(1, rng)
        da = np.subtract(one.cube_a[:2], NOMINAL_A)
        db = np.subtract(one.cube_b[:2], NOMINAL_B)
        np.testing.assert_allclose(da, db)  # level 1 moves both cubes together
        assert np.all(np.abs(da) <= MAX_DISPLACEMENT)
        two = sample_layout(2, rng)
        assert np.hypot(two.cube_a[0] - two.cube_b[0], two.cube_a[1] - two.cube_b[1]) >= MIN_SEPARATION
        assert sample_layout(0, rng).obstacle is None
        three = sample_layout(3, rng)
        assert three.obstacle is not None and three.obstacle[4] > 0


def test_unknown_level_and_query_set_are_named():
    with pytest.raises(ValueError, match="layout level must be one of .* got 7"):
        sample_layout(7, np.random.default_rng(0))
    with pytest.raises(KeyError, match="unknown Stack query set 'stack-nope'"):
        query_states("stack-nope")


def test_layout_round_trip():
    layout = sample_layout(3, np.random.default_rng(1))
    assert StackLayout.from_dict(layout.to_dict()) == layout
