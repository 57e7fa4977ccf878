"""Validation query sets: disjoint from everything frozen, like the frozen sets otherwise."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

import benchmark_data.generation.query_set_build as query_set_build
import benchmark_data.query_sets as query_sets
from benchmark_data.generation.query_set_build import (
    ValidationOverlapError, check_not_a_query_state, check_validation_disjoint, layout_distance,
    nearest_training_distances, validation_states,
)
from benchmark_data.policy_files import policy_experiences, read_training
from benchmark_data.query_sets import VALIDATION_SEEDS
from simulator.door_scenes import DoorLayout, door_query_states
from simulator.stack_scenes import StackLayout, query_states
from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "policy_validation_sets.py"


@pytest.mark.parametrize("name", sorted(VALIDATION_SEEDS))
def test_a_validation_set_has_ten_states_per_level_and_is_a_pure_function_of_its_name(name):
    states = validation_states(name)
    assert states == validation_states(name)
    assert [s.layout_level for s in states] == [lv for lv in range(4) for _ in range(10)]
    assert len({s.state_id for s in states}) == 40 and all(s.state_id.startswith(f"{name}-s") for s in states)


def test_validation_layouts_differ_from_every_frozen_query_state():
    stack = {s.layout.key() for s in validation_states("stack-val")}
    for q in ("stack-orig", "stack-fresh", "stack-hidden"):
        assert stack.isdisjoint({s.layout.key() for s in query_states(q)})
    door = {s.layout.key() for s in validation_states("door-val")}
    for q in ("door-orig", "door-fresh"):
        assert door.isdisjoint({s.layout.key() for s in door_query_states(q)})


@pytest.mark.parametrize("name", sorted(VALIDATION_SEEDS))
def test_the_frozen_policies_demonstrations_share_no_layout_or_draw_with_the_validation_set(name):
    task = query_sets.VALIDATION_TASK[name]
    layout_cls = StackLayout if task == "stack" else DoorLayout
    layouts, keys = [], []
    for t, mechanism, eid in policy_experiences():
        if t == task:
            demos = read_training(mechanism, eid)["demos"]
            layouts += [layout_cls.from_dict(d["layout"]) for d in demos]
            keys += [d["draw_key"] for d in demos]
    assert len(layouts) >= 80
    check_validation_disjoint(name, layouts, keys)


def test_a_training_layout_equal_to_a_validation_state_is_refused_by_name():
    state = validation_states("stack-val")[13]
    with pytest.raises(ValidationOverlapError, match="training layout 1 equals the layout of state 'stack-val-s13'"):
        check_validation_disjoint("stack-val", [StackLayout((0.3, 0.3, 0.0), (0.5, 0.5, 0.0)), state.layout])


def test_a_training_draw_key_equal_to_a_validation_state_id_is_refused():
    with pytest.raises(ValidationOverlapError, match="training draw 'door-val-s07'/1 equals a draw of state 'door-val-s07'"):
        check_validation_disjoint("door-val", training_draw_keys=["train:door-e000:3", "door-val-s07"])


def test_a_validation_seed_that_is_a_frozen_seed_is_refused(monkeypatch):
    monkeypatch.setitem(query_sets.VALIDATION_SEEDS, "stack-val", 5005)  # door-fresh's seed
    with pytest.raises(ValidationOverlapError, match="seed 5005 is the seed of frozen query set 'door-fresh'"):
        check_validation_disjoint("stack-val")


def test_a_validation_set_drawn_with_a_frozen_seed_is_refused_by_its_layouts(monkeypatch):
    monkeypatch.setattr(query_set_build, "validation_states",
                        lambda name: tuple(replace(s, state_id=f"stack-val-s{i:02d}")
                                           for i, s in enumerate(query_states("stack-fresh"))))
    with pytest.raises(ValidationOverlapError, match="has the layout of frozen state 'stack-fresh-s00'"):
        check_validation_disjoint("stack-val")


def test_nearest_distance_is_zero_on_a_demonstrated_layout_and_the_minimum_otherwise():
    states = validation_states("stack-val")
    far = StackLayout((0.5, 0.5, 0.0), (0.6, 0.6, 0.0))
    rows = nearest_training_distances("stack-val", [far, states[25].layout])
    assert rows[25]["nearest_m"] == 0.0 and rows[25]["nearest_index"] == 1
    for state, row in zip(states, rows):
        expected = min(layout_distance("stack", state.layout, t) for t in (far, states[25].layout))
        assert row["nearest_m"] == pytest.approx(expected, abs=1e-5)
    shifted = replace(states[0].layout, cube_b=(states[0].layout.cube_b[0] + 0.03, states[0].layout.cube_b[1] + 0.04,
                                                states[0].layout.cube_b[2]))
    assert layout_distance("stack", states[0].layout, shifted) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="training_layouts is empty"):
        nearest_training_distances("door-val", [])


def test_unknown_validation_set_is_named():
    with pytest.raises(KeyError, match="unknown validation query set 'stack-orig'"):
        validation_states("stack-orig")


def test_the_committed_records_match_the_code():
    spec = importlib.util.spec_from_file_location("policy_validation_sets", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0


def test_a_training_layout_equal_to_any_query_state_is_refused():
    check_not_a_query_state("stack", [StackLayout((0.3, 0.3, 0.0), (0.5, 0.5, 0.0))])
    with pytest.raises(ValidationOverlapError, match="training layout 1 equals the layout of query state 'stack-hidden-s04'"):
        check_not_a_query_state("stack", [StackLayout((0.3, 0.3, 0.0), (0.5, 0.5, 0.0)), query_states("stack-hidden")[4].layout])
    with pytest.raises(ValidationOverlapError, match="query state 'door-val-s31'"):
        check_not_a_query_state("door", [validation_states("door-val")[31].layout])
