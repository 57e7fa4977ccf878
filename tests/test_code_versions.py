"""Code versions stay meaningful across refactors: every hash of the outcome-determining
runner sources is recorded with a mechanism version, so an edit to one of them fails here
until it is either recorded (behaviour kept, golden cells unchanged) or the mechanism bumped."""

from __future__ import annotations

import pytest

from benchmark_data import registry
from benchmark_data.cells import load_cells
from runner import provenance

RECORD_OR_BUMP = (
    "a source hashed into every cell's code version changed. If behaviour is unchanged (a move, "
    "a comment), run tests/test_golden_cells.py and record the new hash under the same "
    "mechanism version in runner/provenance.py; if behaviour changed, bump the mechanism "
    "version and regenerate the frozen cells (docs/architecture.md, 'Code versions').")


def test_live_replay_sources_are_a_recorded_version_of_the_current_mechanism():
    live = provenance.code_version()
    assert provenance.REPLAY_SOURCE_VERSIONS.get(live) == provenance.REPLAY_MECHANISM, (
        f"{live}: {RECORD_OR_BUMP}")


@pytest.mark.parametrize("mechanism", sorted(provenance.POLICY_MECHANISM_SOURCES))
def test_live_policy_sources_are_a_recorded_version_of_their_mechanism(mechanism):
    """Each policy mechanism's sources (version-1 policies are still frozen and re-executed)."""
    live = provenance.policy_source_version(mechanism)
    assert provenance.POLICY_SOURCE_VERSIONS.get(live) == mechanism, f"{live}: {RECORD_OR_BUMP}"


def test_the_current_policy_mechanism_is_the_newest_and_default():
    assert provenance.policy_source_version() == provenance.policy_source_version(provenance.POLICY_MECHANISM)
    assert provenance.POLICY_MECHANISM == max(provenance.POLICY_MECHANISM_SOURCES)


def test_recorded_versions_never_name_a_future_mechanism():
    assert max(provenance.REPLAY_SOURCE_VERSIONS.values()) == provenance.REPLAY_MECHANISM
    assert max(provenance.POLICY_SOURCE_VERSIONS.values()) == provenance.POLICY_MECHANISM


def test_an_unrecorded_hash_belongs_to_no_mechanism():
    assert provenance.replay_mechanism_of("sha256:0000000000000000") is None
    assert provenance.replay_mechanism_of(provenance.code_version()) == provenance.REPLAY_MECHANISM


@pytest.mark.parametrize("setting", [s for s in registry.SETTINGS.values() if s.mechanism == "replay" and not s.sealed],
                         ids=lambda s: s.id)
def test_every_stored_replay_cell_was_made_by_a_recorded_version(setting):
    """The frozen Replay cells name only code versions the project recorded, and all of the
    current mechanism: their outcomes are comparable with a re-execution today."""
    frame = load_cells(setting.mechanism.value, setting.query_set)
    stored = set(frame["code_version"].unique())
    assert stored, f"{setting.id}: no stored cells"
    unknown = {v for v in stored if provenance.replay_mechanism_of(v) is None}
    assert not unknown, f"{setting.id}: cells of unrecorded code versions {sorted(unknown)}"
    assert {provenance.replay_mechanism_of(v) for v in stored} == {provenance.REPLAY_MECHANISM}
