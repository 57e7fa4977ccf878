"""The policy page's Door paragraph (issue 38): the policies stay as they are, and each Door
policy's gates on door-val version 1 stand beside its gates_v2 from its training.json."""

from __future__ import annotations

import json

from benchmark_data.pages.policy_settings import door_demos_text
from benchmark_data.policy_files import policy_dir


def _record(groups, passed, failing=()):
    gates = {name: {"passed": name not in failing} for name in ("own", "draw 0", "draws 1-4")}
    return {"groups": groups, "gates": gates, "gates_passed": passed}


def test_the_paragraph_says_the_policies_stay_and_shows_both_gates(tmp_path):
    assert "stay as they are" in door_demos_text(tmp_path)
    assert "| policy |" not in door_demos_text(tmp_path)  # no gates_v2 measured: no table
    old = {"own": [19, 20], "draw 0": [32, 40], "draws 1-4": [26, 160]}
    new = {"own": [19, 20], "draw 0": [33, 40], "draws 1-4": [34, 160]}
    record = {"validation": {"groups": old}, **_record(old, False, ("draws 1-4",)),
              "gates_v2": _record(new, True)}
    path = policy_dir("policy", "door-e000", tmp_path) / "training.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    text = door_demos_text(tmp_path)
    assert "| door-e000 Policy | 32/40 -> 33/40 | 26/160 -> 34/160 | fail: draws 1-4 -> all pass |" in text


def test_a_re_run_that_did_not_reproduce_shows_both_counts(tmp_path):
    groups = {"own": [20, 20], "draw 0": [32, 40], "draws 1-4": [46, 160]}
    entry = {**_record(groups, True), "rerun_reproduces": False,
             "level_2_version_1_rerun": [23, 50], "level_2_version_1_recorded": [24, 50]}
    path = policy_dir("policy", "door-e002", tmp_path) / "training.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"validation": {"groups": groups}, **_record(groups, True), "gates_v2": entry}))
    assert "all pass -> all pass (level 2 on version 1 re-run: 23/50, recorded 24/50) |" in door_demos_text(tmp_path)
