"""Door layouts and the Door simulator/expert (the simulator parts need robosuite/MuJoCo)."""

import numpy as np
import pytest

from simulator.door_scenes import DoorLayout, N_STATES_PER_LEVEL, NOMINAL_DOOR, door_query_states, sample_door_layout


def test_door_query_sets_are_reproducible_and_levelled():
    states = door_query_states("door-orig")
    assert states == door_query_states("door-orig")
    assert [s.layout_level for s in states] == [lv for lv in range(4) for _ in range(N_STATES_PER_LEVEL)]
    assert all(s.layout.hinge > 0 for s in states if s.layout_level == 2)
    assert all(s.layout.obstacle is not None for s in states if s.layout_level == 3)
    assert {s.layout.key() for s in states}.isdisjoint({s.layout.key() for s in door_query_states("door-fresh")})


def test_door_level_ranges_and_errors():
    rng = np.random.default_rng(0)
    for _ in range(30):
        one = sample_door_layout(1, rng)
        assert abs(one.door[0] - NOMINAL_DOOR[0]) <= 0.12 and abs(one.door[1] - NOMINAL_DOOR[1]) <= 0.06
    with pytest.raises(ValueError, match="layout level must be one of .* got -1"):
        sample_door_layout(-1, rng)
    with pytest.raises(KeyError, match="unknown Door query set 'door-x'"):
        door_query_states("door-x")
    layout = sample_door_layout(3, rng)
    assert DoorLayout.from_dict(layout.to_dict()) == layout


@pytest.fixture(scope="module")
def door_sim():
    from simulator.door_sim import DoorSim

    return DoorSim()


@pytest.mark.sim
def test_door_restore_and_hash(door_sim):
    states = door_query_states("door-orig")
    door_sim.restore(states[25].layout)
    first = door_sim.state_hash()
    assert door_sim.hinge() == pytest.approx(states[25].layout.hinge)
    door_sim.restore(states[3].layout)
    other = door_sim.state_hash()
    door_sim.restore(states[25].layout)
    assert door_sim.state_hash() == first != other
    moved = DoorLayout((NOMINAL_DOOR[0] + 0.05, NOMINAL_DOOR[1], NOMINAL_DOOR[2]))
    door_sim.restore(DoorLayout(NOMINAL_DOOR))
    nominal = door_sim.state_hash()
    door_sim.restore(moved)
    assert door_sim.state_hash() != nominal  # the door pose is a model field, and in the hash


@pytest.mark.sim
def test_door_expert_opens_the_door_deterministically(door_sim):
    from simulator.door_expert import door_stream_draw, run_door_expert

    layout, style = door_stream_draw(0)
    path, ok = run_door_expert(door_sim, layout, style)
    final = door_sim.state_hash()
    assert ok and door_sim.hinge() > 0.3 and door_sim.latch() > 1.0
    assert path.shape[1] == 13
    _, again = run_door_expert(door_sim, layout, style)
    assert again and door_sim.state_hash() == final


@pytest.mark.sim
def test_door_recording_has_robomimic_shapes(door_sim):
    from simulator.door_expert import record_door

    rec = record_door(door_sim, 0)
    n = len(rec["path"])
    assert rec["accepted"]
    assert rec["actions"].shape == (n, 7) and rec["states"].shape[0] == n
    assert rec["quat"].shape == (n, 4) and rec["door"].shape == (n, 5)
    assert rec["door"][-1, 0] > 0.3  # the hinge angle recorded at the end is past success
