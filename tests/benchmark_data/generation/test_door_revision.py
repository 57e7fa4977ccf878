"""Version 2 of the Door query sets: only the level-2 states' articulation may change, and the
re-run plans exactly the cells of the changed states."""

from __future__ import annotations

import json

import pytest

from benchmark_data.generation.door_revision import (
    DOOR_POLICY_SETTINGS, RevisionChangesTooMuch, _revised, plan_revised_cells, revised_state_ids,
)
from benchmark_data.paths import REVISION_ROOT
from benchmark_data.query_sets import read_scenes

pytestmark = pytest.mark.skipif(not (REVISION_ROOT / "revision.json").exists(),
                                reason="no revision of the query sets is being made")


@pytest.mark.parametrize("query_set", ("door-orig", "door-fresh"))
def test_the_revision_changes_the_ajar_states_only(query_set):
    changed = revised_state_ids(query_set)
    assert changed == [f"{query_set}-s{i}" for i in range(20, 30)]
    assert json.loads((REVISION_ROOT / "revision.json").read_text())["changed"][query_set] == changed


def test_a_revision_that_moves_a_door_or_another_level_is_refused():
    old = read_scenes("door-orig")
    moved = read_scenes("door-orig", REVISION_ROOT).copy()
    moved.loc[moved.state_id == "door-orig-s03", "door_x"] += 0.01
    with pytest.raises(RevisionChangesTooMuch, match="column 'door_x' differs at scene 'door-orig-s03-d0'"):
        _revised(old, moved, "door-orig")
    relevelled = read_scenes("door-orig", REVISION_ROOT).copy()
    relevelled.loc[relevelled.state_id == "door-orig-s05", "state_hash"] = "x"
    with pytest.raises(RevisionChangesTooMuch, match=r"state 'door-orig-s05' \(level 0\) changes more than its articulation"):
        _revised(old, relevelled, "door-orig")


def test_the_re_run_plans_750_cells_per_setting_seed_major():
    cells = plan_revised_cells()
    assert len(cells) == 750 * len(DOOR_POLICY_SETTINGS) == len({c.key for c in cells})
    assert [c.seed for c in cells] == sorted(c.seed for c in cells)
    assert {c.state_id.rsplit("-d", 1)[0] for c in cells} == {
        f"{q}-s{i}" for q in ("door-orig", "door-fresh") for i in range(20, 30)}
