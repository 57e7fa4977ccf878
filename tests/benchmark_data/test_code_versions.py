"""Code versions are declared mechanism versions, not hashes of files: a source file can be
edited, moved or renamed without touching the code version of a published cell, and every
stored cell still names a version that maps to the current mechanism (the golden cells,
tests/simulator/test_golden_cells.py, are what catches a behaviour change without a bump)."""

from __future__ import annotations

import json

import pytest

from benchmark_data import registry
from benchmark_data.cells import load_cells
from benchmark_data.policy_files import policy_dir
from simulator import provenance


def test_a_replay_cell_names_the_declared_mechanism():
    assert provenance.code_version() == f"replay/{provenance.REPLAY_MECHANISM}"
    assert provenance.replay_mechanism_of(provenance.code_version()) == provenance.REPLAY_MECHANISM


def test_old_and_unknown_code_versions_map_as_recorded():
    for legacy, mechanism in provenance.LEGACY_REPLAY_CODE_VERSIONS.items():
        assert provenance.replay_mechanism_of(legacy) == mechanism
    assert provenance.replay_mechanism_of("sha256:0000000000000000") is None
    assert provenance.replay_mechanism_of("replay/x") is None
    assert provenance.replay_mechanism_of("replay/7") == 7


def test_changing_the_runner_sources_leaves_the_code_version_alone(monkeypatch):
    """The freeze this replaces: a comment in a hashed file changed every new cell's version.
    Other source files give another sources hash (information) and the same code version."""
    before_version, before_sources = provenance.code_version(), provenance.replay_sources_sha256()
    monkeypatch.setattr(provenance, "OUTCOME_SOURCES", provenance.OUTCOME_SOURCES[:-1])
    provenance.replay_sources_sha256.cache_clear()
    try:
        assert provenance.replay_sources_sha256() != before_sources
        assert provenance.code_version() == before_version
    finally:
        monkeypatch.undo()
        provenance.replay_sources_sha256.cache_clear()


def test_the_sources_hash_is_kept_as_information():
    replay = json.loads(provenance.package_versions())
    assert replay[provenance.SOURCES_KEY] == provenance.replay_sources_sha256()
    assert replay[provenance.SOURCES_KEY].startswith("sha256:")


@pytest.mark.parametrize("setting", [s for s in registry.SETTINGS.values() if s.mechanism == "replay" and not s.sealed],
                         ids=lambda s: s.id)
def test_every_stored_replay_cell_maps_to_the_current_mechanism(setting):
    """The frozen Replay cells name only code versions that map to the current mechanism: their
    outcomes are comparable with a re-execution today."""
    frame = load_cells(setting.mechanism.value, setting.query_set)
    stored = set(frame["code_version"].unique())
    assert stored, f"{setting.id}: no stored cells"
    assert {provenance.replay_mechanism_of(v) for v in stored} == {provenance.REPLAY_MECHANISM}, stored


@pytest.mark.parametrize("setting", [s for s in registry.SETTINGS.values()
                                     if s.mechanism.value in ("policy", "policy_dr")], ids=lambda s: s.id)
def test_every_stored_policy_cell_names_its_policys_current_weights(setting):
    """Each stored policy cell's code version is one its frozen policy answers to: the declared
    mechanism with these weights, or the source-and-weights hash its training record kept."""
    frame = load_cells(setting.mechanism.value, setting.query_set)
    for experience_id in setting.experience_ids:
        directory = str(policy_dir(setting.mechanism.value, experience_id))
        assert provenance.policy_mechanism_of(directory) == provenance.POLICY_MECHANISM
        stored = set(frame.loc[frame.experience_id == experience_id, "code_version"])
        assert stored and stored <= provenance.policy_code_versions(directory), (experience_id, stored)


def test_a_policy_code_version_is_its_mechanism_and_weights(tmp_path):
    directory = tmp_path / "p"
    directory.mkdir()
    (directory / "spec.json").write_text(json.dumps({"policy_mechanism": 2}))
    (directory / "weights.pt").write_bytes(b"one")
    first = provenance.policy_code_version(str(directory))
    assert first.startswith("policy/2+weights:")
    (directory / "weights.pt").write_bytes(b"two")
    assert provenance.policy_code_version(str(directory)) != first
    assert provenance.policy_code_versions(str(directory)) == {provenance.policy_code_version(str(directory))}
    (directory / "training.json").write_text(json.dumps({"code_version": "sha256:0123456789abcdef"}))
    assert "sha256:0123456789abcdef" in provenance.policy_code_versions(str(directory))
