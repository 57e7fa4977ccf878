"""Door states must start physically valid (issue 38): no two bodies interpenetrating deeper
than 1 mm, hinge and latch still over one second of neutral control.

The published Door query sets' level-2 states (door ajar) fail this check today: the latch
starts inside the frame. `valid_articulation` re-draws their hinge and latch from each state's
own seed; every such state passes."""

from __future__ import annotations

import pytest

from benchmark_data.query_sets import read_scenes
from simulator.door_scenes import door_query_states, valid_articulation
from simulator.errors import InvalidState

pytestmark = pytest.mark.sim
DOOR_QUERY_SETS = ("door-orig", "door-fresh")


@pytest.fixture(scope="module")
def sim():
    from simulator.door_sim import DoorSim

    return DoorSim()


def _failures(sim, states) -> dict[str, str]:
    from simulator.door_sim import check_valid_state

    failures = {}
    for state in states:
        try:
            check_valid_state(sim, state.layout, state.state_id)
        except InvalidState as exc:
            failures[state.state_id] = str(exc)
    return failures


@pytest.mark.parametrize("query_set", DOOR_QUERY_SETS)
def test_the_published_ajar_states_are_the_invalid_ones(sim, query_set):
    """The issue's table, recomputed: every failing state is a level-2 one, and (nearly) all
    level-2 states fail; levels 0, 1 and 3 start clean."""
    states = door_query_states(query_set)
    published = {row.state_id for row in read_scenes(query_set).itertuples()}
    assert {s.state_id for s in states} <= published
    failures = _failures(sim, states)
    level2 = {s.state_id for s in states if s.layout_level == 2}
    assert set(failures) <= level2, sorted(set(failures) - level2)
    assert len(failures) >= 9, failures


@pytest.mark.parametrize("query_set", DOOR_QUERY_SETS)
def test_re_articulated_ajar_states_are_valid(sim, query_set):
    states = [s for s in door_query_states(query_set) if s.layout_level == 2]
    fixed = [type(s)(s.state_id, s.layout_level, valid_articulation(s.layout, s.state_id)) for s in states]
    assert _failures(sim, fixed) == {}
    for old, new in zip(states, fixed):  # only the articulation changes
        assert new.layout.door == old.layout.door and new.layout.obstacle == old.layout.obstacle
        assert 0.2 <= new.layout.hinge < 0.3 and 0.0 <= new.layout.latch <= 0.08


def test_the_check_names_the_bodies_and_depth(sim):
    from simulator.door_sim import check_valid_state

    state = door_query_states("door-orig")[20]
    with pytest.raises(InvalidState, match=r"door-orig-s20: .*Door_latch.* interpenetrate by \d+\.\d mm"):
        check_valid_state(sim, state.layout, state.state_id)
