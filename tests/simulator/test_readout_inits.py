"""Readout initializations: a pure function of (task, split, index), disjoint splits, a seed
namespace of their own, and every start physically valid."""

from __future__ import annotations

import pytest

from simulator.door_scenes import QUERY_SET_SEEDS as DOOR_QUERY_SETS, door_query_states
from simulator.readout_inits import SPLITS, TASKS, initialization, initializations
from simulator.stack_scenes import QUERY_SET_SEEDS as STACK_QUERY_SETS, query_states


def test_initialization_is_a_pure_function():
    assert initialization("door", "confirm", 5) == initialization("door", "confirm", 5)
    assert initialization("stack", "train", 0).init_id == "stack-train-i000"


@pytest.mark.parametrize("task", TASKS)
def test_splits_are_disjoint_and_apart_from_query_states(task):
    """Every split of both bank versions; version 2's train and dev are version 1's own."""
    keys = {}
    for bank in ("v1", "v2"):
        for split in SPLITS if bank == "v1" else ("confirm", "eval"):
            inits = initializations(task, split, bank)
            assert len(inits) == SPLITS[split]
            for init in inits:
                keys.setdefault(init.layout.key(), []).append(init.init_id)
    assert initializations(task, "dev", "v2") == initializations(task, "dev", "v1")
    assert all(len(ids) == 1 for ids in keys.values())
    if task == "door":
        query = {s.layout.key() for q in DOOR_QUERY_SETS for s in door_query_states(q)}
    else:
        query = {s.layout.key() for q in STACK_QUERY_SETS for s in query_states(q)}
    assert not query & set(keys)


def test_door_never_draws_the_ajar_level():
    levels = {i.layout_level for s in SPLITS for i in initializations("door", s)}
    assert levels == {0, 1}
    assert all(i.layout.latch == 0.0 and i.layout.hinge == 0.0
               for s in SPLITS for i in initializations("door", s))


@pytest.mark.parametrize(("task", "split", "index"), [
    ("drawer", "train", 0), ("door", "test", 0), ("door", "train", 48), ("stack", "eval", -1),
    ("stack", "confirm", 48)])
def test_bad_arguments_name_the_field(task, split, index):
    with pytest.raises(ValueError, match="task|split|index"):
        initialization(task, split, index)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("bank", ["v1", "v2"])
@pytest.mark.parametrize("task", TASKS)
def test_every_start_is_physically_valid(task, bank):
    """Issue 38's check on every readout initialization of both bank versions: no
    interpenetration over 1 mm, the coordinate still under one second of neutral action."""
    from simulator.readout_checks import Target, check_start
    from simulator.readout_inits import make_sim, start

    sim = make_sim(task)
    target = Target(sim, task)
    bad = {}
    for split in SPLITS if bank == "v1" else ("confirm", "eval"):  # v2's train and dev are v1's
        for init in initializations(task, split, bank):
            start(sim, init)
            check = check_start(sim, task, target)
            if not check.valid:
                bad[init.init_id] = check.reason
    assert bad == {}


@pytest.mark.sim
def test_start_check_catches_an_ajar_door_with_the_latch_in_the_frame():
    """The check sees issue 38's broken start (door-orig s21: latch inside the frame)."""
    from simulator.door_sim import DoorSim
    from simulator.door_scenes import DoorLayout
    from simulator.readout_checks import check_start

    sim = DoorSim()
    base = initialization("door", "train", 0).layout
    sim.restore(DoorLayout(base.door, hinge=0.119, latch=0.3))
    check = check_start(sim, "door")
    assert not check.valid and "coordinate moved" in check.reason
