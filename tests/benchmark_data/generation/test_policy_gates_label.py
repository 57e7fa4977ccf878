"""The failed policy gates a setting is published with (docs/policy_protocol.md, "When a gate
fails"): read from each policy's training.json, one line per failed gate with its value, n and
bar, and handed by the publisher to the site."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmark_data.generation.recipe_gates import judge_gates
from benchmark_data.policy_files import failed_gates, policy_dir
from benchmark_data.registry import Setting, get_setting
from expaudit.errors import InvalidInput
from leaderboard.matrix import SceneTable, TransferData
from service.catalog.catalog import BenchmarkCatalog, StaticCatalog
from service.submissions.publishing import setting_infos

DOOR_POLICY = get_setting("door-policy-k3-orig")
DOOR_POLICY_DR = get_setting("door-policydr-k3-orig")


def gate(value, n, min_n, passed, **bar):
    return {"value": value, "n": n, "min_n": min_n, "passed": passed, **bar}


PASSED = {"own": gate(0.95, 20, 20, True, at_least=0.8),
          "draw 0": gate(0.8, 40, 40, True, at_least=0.5),
          "draws 1-4": gate(0.25, 160, 160, True, at_least=0.2)}


def write_policy(root, mechanism: str, experience_id: str, training: dict) -> None:
    """A trained policy: its three files, training.json as given."""
    directory = policy_dir(mechanism, experience_id, root)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights.pt").write_bytes(b"")
    (directory / "spec.json").write_text("{}")
    (directory / "training.json").write_text(json.dumps(training))


def test_passed_gates_give_nothing(tmp_path):
    for eid in DOOR_POLICY.experience_ids:
        write_policy(tmp_path, "policy", eid, {"gates": PASSED})
    assert failed_gates(DOOR_POLICY, tmp_path) == ()


def test_a_gate_below_its_at_least_bar_names_policy_value_n_and_bar(tmp_path):
    write_policy(tmp_path, "policy", "door-e000",
                 {"gates": {**PASSED, "draws 1-4": gate(0.1625, 160, 160, False, at_least=0.2)}})
    write_policy(tmp_path, "policy", "door-e002",
                 {"gates": {**PASSED, "own": gate(0.7, 20, 20, False, at_least=0.8)}})
    assert failed_gates(DOOR_POLICY, tmp_path) == (
        "door-e000 Policy: draws 1-4 success 0.16 (n 160), below its gate 0.20",
        "door-e002 Policy: own success 0.70 (n 20), below its gate 0.80")


def test_a_gap_above_its_at_most_bar_is_named_as_a_gap(tmp_path):
    write_policy(tmp_path, "policy_dr", "door-e001",
                 {"gates": {"own": gate(0.9, 20, 20, True, at_least=0.8),
                            "draw gap": gate(0.12, 200, 200, False, at_most=0.1)}})
    write_policy(tmp_path, "policy_dr", "door-e002",
                 {"gates": {"draw gap": gate(0.1, 200, 200, True, at_most=0.1)}})
    assert failed_gates(DOOR_POLICY_DR, tmp_path) == (
        "door-e001 Policy+DR: draw gap 0.12 (n 200), above its gate 0.10",)


def test_too_few_episodes_fail_a_gate_whatever_the_value(tmp_path):
    write_policy(tmp_path, "policy", "door-e000",
                 {"gates": {**PASSED, "own": gate(0.95, 10, 20, False, at_least=0.8),
                            "draw 0": gate(0.3, 8, 40, False, at_least=0.5)}})
    assert failed_gates(DOOR_POLICY, tmp_path) == (
        "door-e000 Policy: own success 0.95 (n 10), n below the 20 episodes its gate needs",
        "door-e000 Policy: draw 0 success 0.30 (n 8), below its gate 0.50 and n below the 40 "
        "episodes its gate needs")


def test_a_value_that_rounds_to_its_bar_is_shown_to_four_places(tmp_path):
    write_policy(tmp_path, "policy", "door-e000",
                 {"gates": {**PASSED, "own": gate(0.7975, 20, 20, False, at_least=0.8)}})
    assert failed_gates(DOOR_POLICY, tmp_path) == (
        "door-e000 Policy: own success 0.7975 (n 20), below its gate 0.80",)


def test_version_1_untrained_and_replay_give_nothing(tmp_path):
    write_policy(tmp_path, "policy", "door-e000", {"experience_id": "door-e000", "curve": []})
    directory = policy_dir("policy", "door-e001", tmp_path)  # no weights: not trained
    directory.mkdir(parents=True)
    (directory / "training.json").write_text(json.dumps(
        {"gates": {"own": gate(0.1, 20, 20, False, at_least=0.8)}}))
    assert failed_gates(DOOR_POLICY, tmp_path) == ()
    assert failed_gates(get_setting("stack-replay-k3-orig"), tmp_path) == ()


def test_the_gates_judge_gates_writes_are_read(tmp_path):
    """The format the trainer writes (benchmark_data.generation.recipe_policies)."""
    groups = {"own": [19, 20], "draw 0": [32, 40], "draws 1-4": [26, 160]}
    write_policy(tmp_path, "policy", "door-e000", {"gates": judge_gates("policy", groups)})
    dr_groups = {"own": [18, 20], "draw 0": [30, 40], "draws 1-4": [96, 160]}
    write_policy(tmp_path, "policy_dr", "door-e000", {"gates": judge_gates("policy_dr", dr_groups)})
    assert failed_gates(DOOR_POLICY, tmp_path) == (
        "door-e000 Policy: draws 1-4 success 0.16 (n 160), below its gate 0.20",)
    assert failed_gates(DOOR_POLICY_DR, tmp_path) == (
        "door-e000 Policy+DR: draw gap 0.15 (n 200), above its gate 0.10",)


@pytest.mark.parametrize("broken, field", [
    ({"value": 0.1, "n": 20, "min_n": 20, "at_least": 0.8}, "'passed'"),
    ({"value": 0.1, "n": 20, "min_n": 20, "passed": False}, "'at_least' nor 'at_most'"),
])
def test_a_malformed_gate_names_the_file_gate_and_field(tmp_path, broken, field):
    write_policy(tmp_path, "policy", "door-e000", {"gates": {"own": broken}})
    with pytest.raises(InvalidInput, match=rf"door-e000.training\.json: gate 'own' .*{field}"):
        failed_gates(DOOR_POLICY, tmp_path)


def test_the_publisher_reads_the_gates_under_the_catalog_root(tmp_path):
    write_policy(tmp_path, "policy", "door-e000",
                 {"gates": {**PASSED, "draws 1-4": gate(0.1625, 160, 160, False, at_least=0.2)}})
    infos = {i.setting_id: i for i in setting_infos(BenchmarkCatalog(tmp_path))}
    line = "door-e000 Policy: draws 1-4 success 0.16 (n 160), below its gate 0.20"
    assert infos["door-policy-k3-orig"].policy_gates_failed == (line,)
    assert infos["door-policy-k3-fresh"].policy_gates_failed == (line,)
    assert infos["door-policydr-k3-orig"].policy_gates_failed == ()
    assert infos["stack-replay-k3-orig"].policy_gates_failed == ()


def test_a_catalog_of_score_tables_has_no_policy_gates():
    scenes = SceneTable(scene_ids=("s0", "s1"), state_ids=np.array([0, 1]),
                        layout_level=np.array([0, 0]), appearance_draw=np.array([0, 0]))
    data = TransferData(("door-e000", "door-e001"), scenes, np.ones((2, 2, 1), dtype=np.int8))
    catalog = StaticCatalog({Setting("lab-policy", "door", "policy", 2, "door-orig"): data})
    assert [i.policy_gates_failed for i in setting_infos(catalog)] == [()]
