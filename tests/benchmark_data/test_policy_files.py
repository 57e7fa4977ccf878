"""The readers of the frozen policies: where a policy's files are, when it counts as trained,
and what a missing one raises. They read files only (no simulator, no torch)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmark_data.policy_files import (
    POLICY_MECHANISMS,
    PolicyNotFoundError,
    is_trained,
    policy_dir,
    policy_dirs,
    policy_experiences,
    read_training,
)
from benchmark_data.registry import SETTINGS
from expaudit.errors import DataNotFound

FILES = ("weights.pt", "spec.json", "training.json")


def _write(root, mechanism: str, experience_id: str, names=FILES) -> None:
    directory = policy_dir(mechanism, experience_id, root)
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text(json.dumps({"experience_id": experience_id}))


def test_policy_experiences_cover_every_policy_setting_once_in_order():
    found = policy_experiences()
    assert len(found) == len(set(found))
    expected = {(s.task, s.mechanism.value, e) for s in SETTINGS.values()
                if s.mechanism in POLICY_MECHANISMS for e in s.experience_ids}
    assert set(found) == expected
    assert found[:3] == [("stack", "policy", "stack-e000"), ("stack", "policy", "stack-e001"),
                         ("stack", "policy", "stack-e002")]


def test_a_policy_is_trained_only_with_all_three_files(tmp_path):
    assert policy_dir("policy", "stack-e000", tmp_path) == tmp_path / "policies" / "policy" / "stack-e000"
    assert not is_trained("policy", "stack-e000", tmp_path)
    _write(tmp_path, "policy", "stack-e000", FILES[:2])
    assert not is_trained("policy", "stack-e000", tmp_path)
    _write(tmp_path, "policy", "stack-e000")
    assert is_trained("policy", "stack-e000", tmp_path)


def test_policy_dirs_list_the_trained_policies_of_one_task(tmp_path):
    _write(tmp_path, "policy_dr", "stack-e001")
    _write(tmp_path, "policy", "stack-e002", FILES[:1])  # not trained
    _write(tmp_path, "policy", "door-e000")
    assert policy_dirs("stack", tmp_path) == {
        ("policy_dr", "stack-e001"): str(policy_dir("policy_dr", "stack-e001", tmp_path))}
    assert set(policy_dirs("door", tmp_path)) == {("policy", "door-e000")}


def test_a_missing_training_record_is_data_not_found_naming_the_file(tmp_path):
    with pytest.raises(PolicyNotFoundError, match=r"policy_dr policy of 'door-e002': .*training.json "
                                                  r"does not exist \(train it with"):
        read_training("policy_dr", "door-e002", tmp_path)
    assert issubclass(PolicyNotFoundError, DataNotFound)
    assert issubclass(PolicyNotFoundError, FileNotFoundError)
    _write(tmp_path, "policy_dr", "door-e002")
    assert read_training("policy_dr", "door-e002", tmp_path) == {"experience_id": "door-e002"}


def test_the_readers_load_neither_the_simulator_nor_torch():
    code = ("import sys, benchmark_data.policy_files; "
            "loaded = [m for m in ('mujoco', 'robosuite', 'torch', 'simulator') if m in sys.modules]; "
            "assert not loaded, loaded")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
