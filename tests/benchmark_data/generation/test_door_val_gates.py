"""The Door policies' gates on door-val version 2 (issue 38): the changed states' episodes are
swapped into the recorded counts, the gates judged again, the re-run checked against the record."""

from __future__ import annotations

import pytest

from benchmark_data.generation.door_val_gates import (GateRerunMismatch, changed_states, gates_v2,
                                                      rerun_items)


def _episodes(items, success):
    return {scene_id: {"scene_id": scene_id, "group": group, "seed": 0, "success": success(scene_id)}
            for group, scene_id, _, _ in items}


def _record(level2_successes):
    return {"mechanism": "policy", "experience_id": "door-e000",
            "validation": {"query_set": "door-val",
                           "groups": {"own": [19, 20], "draw 0": [20, 40], "draws 1-4": [30, 160]},
                           "validation_levels": {"level 0": [20, 50], "level 1": [10, 50],
                                                 "level 2": [level2_successes, 50], "level 3": [10, 50]}}}


def test_the_changed_states_and_their_items():
    changed = changed_states()
    assert changed == [f"door-val-s{i}" for i in range(20, 29)]
    assert len(rerun_items(1)) == 50 and len(rerun_items(2)) == 45
    assert {scene for _, scene, _, _ in rerun_items(2)} <= {scene for _, scene, _, _ in rerun_items(1)}


def test_version_2_episodes_replace_the_changed_ones_and_the_gates_are_judged_again():
    changed = changed_states()
    v1 = _episodes(rerun_items(1), lambda s: s.endswith("-d0"))  # 10 successes, all on draw 0
    v2 = _episodes(rerun_items(2), lambda s: True)  # all 45 succeed
    entry = gates_v2(_record(10), v1, v2, changed)
    # draw 0: 20 - 9 (changed, v1) + 9 (v2); draws 1-4: 30 - 0 + 36
    assert entry["groups"] == {"own": [19, 20], "draw 0": [20, 40], "draws 1-4": [66, 160]}
    assert entry["validation_levels"]["level 2"] == [46, 50]
    assert entry["rerun_reproduces"] and entry["gates"]["draws 1-4"]["passed"]
    assert entry["changed_states"] == changed and entry["query_set_version"] == 2


def test_a_re_run_that_does_not_reproduce_is_recorded_and_a_missing_episode_refused():
    changed = changed_states()
    v1 = _episodes(rerun_items(1), lambda s: s.endswith("-d0"))
    v2 = _episodes(rerun_items(2), lambda s: False)
    entry = gates_v2(_record(11), v1, v2, changed)
    assert not entry["rerun_reproduces"]
    assert (entry["level_2_version_1_rerun"], entry["level_2_version_1_recorded"]) == ([10, 50], [11, 50])
    del v2["door-val-s20-d3"]
    with pytest.raises(GateRerunMismatch, match="incomplete"):
        gates_v2(_record(10), v1, v2, changed)
    del v1["door-val-s29-d0"]
    with pytest.raises(GateRerunMismatch, match="49 episodes"):
        gates_v2(_record(10), v1, v2, changed)
