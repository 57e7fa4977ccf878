"""Data versions: the current release and the earlier one kept by its version (issue 38).

Version 0.2.0 republished the four Door policy settings with the ajar states made valid; the
files 0.1.0 had are kept under versions/0.1.0 and read back as that version's data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmark_data.cells import load_cells
from benchmark_data.downloads import data_version
from benchmark_data.frozen import load_transfer
from benchmark_data.generation.door_revision import DOOR_POLICY_SETTINGS, RevisionNotReady, publish
from benchmark_data.image_archive import iter_pngs
from benchmark_data.paths import FROZEN_ROOT
from benchmark_data.query_sets import read_scenes, scenes_version
from benchmark_data.versions import (DATA_VERSION, UnknownDataVersion, known_versions,
                                     load_transfer_at, query_images_at, version_record, version_root)

OLD = "0.1.0"
CHANGED = {q: {f"{q}-s{i}" for i in range(20, 30)} for q in ("door-orig", "door-fresh")}


def test_the_current_release_is_the_bumped_one_and_the_old_one_is_kept():
    assert data_version() == DATA_VERSION == "0.3.0"
    assert known_versions() == [OLD, "0.2.0", DATA_VERSION]
    record = version_record(OLD)
    assert record["superseded_by"] == "0.2.0" and record["settings"] == list(DOOR_POLICY_SETTINGS)
    assert {q: set(ids) for q, ids in record["changed_states"].items()} == CHANGED
    for rel in record["files"]:
        assert (version_root(OLD) / rel).exists(), rel


@pytest.mark.parametrize("query_set", sorted(CHANGED))
def test_only_the_ajar_states_scenes_images_and_cells_differ(query_set):
    old, new = read_scenes(query_set, version_root(OLD)), read_scenes(query_set)
    assert (scenes_version(old), scenes_version(new)) == (1, 2)
    differs = set(old.state_id[old.state_hash.values != new.state_hash.values])
    assert differs == CHANGED[query_set]
    old_png = dict(iter_pngs(version_root(OLD) / "query_sets" / query_set / "images.tar"))
    new_png = dict(iter_pngs(FROZEN_ROOT / "query_sets" / query_set / "images.tar"))
    assert old_png.keys() == new_png.keys()
    assert {k.rsplit("-d", 1)[0] for k in old_png if old_png[k] != new_png[k]} == CHANGED[query_set]
    for mechanism in ("policy", "policy_dr"):
        a, b = load_cells(mechanism, query_set, version_root(OLD)), load_cells(mechanism, query_set)
        key = ["experience_id", "state_id", "seed"]
        a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
        assert (a[key].values == b[key].values).all() and len(a) == 3 * 200 * 5
        kept = ~a.state_id.str.rsplit("-d", n=1).str[0].isin(CHANGED[query_set])
        pd.testing.assert_frame_equal(a[kept], b[kept])
        assert (a.state_hash[~kept].values != b.state_hash[~kept].values).all()
        assert int((~kept).sum()) == 750


@pytest.mark.parametrize("setting_id", DOOR_POLICY_SETTINGS)
def test_a_door_setting_reads_back_as_either_version(setting_id):
    old, new = load_transfer_at(setting_id, OLD), load_transfer_at(setting_id)
    assert np.array_equal(new.outcomes, load_transfer(setting_id).outcomes)
    assert old.scenes.scene_ids == new.scenes.scene_ids
    level2 = np.asarray(old.scenes.layout_level) == 2
    assert np.array_equal(old.outcomes[:, ~level2], new.outcomes[:, ~level2])
    assert (old.outcomes[:, level2] != new.outcomes[:, level2]).any()
    assert query_images_at(setting_id, OLD).is_relative_to(version_root(OLD))


def test_a_setting_the_version_did_not_change_reads_the_same_files():
    setting_id = "stack-policy-k3-orig"
    assert np.array_equal(load_transfer_at(setting_id, OLD).outcomes, load_transfer(setting_id).outcomes)
    assert query_images_at(setting_id, OLD) == query_images_at(setting_id)


def test_release_0_3_0_only_adds_files_so_0_2_0_reads_the_current_ones():
    record = version_record("0.2.0")
    assert record["superseded_by"] == DATA_VERSION and record["settings"] == [] and record["files"] == []
    for setting_id in ("door-policy-k3-orig", "stack-replay-k3-orig"):
        assert np.array_equal(load_transfer_at(setting_id, "0.2.0").outcomes, load_transfer(setting_id).outcomes)
        assert query_images_at(setting_id, "0.2.0") == query_images_at(setting_id)


def test_an_unknown_version_is_refused_by_name():
    with pytest.raises(UnknownDataVersion, match=r"data_version must be one of \['0.1.0', '0.2.0', '0.3.0'\].*'9.9'"):
        load_transfer_at("door-policy-k3-orig", "9.9")


def test_a_published_revision_is_not_published_twice():
    with pytest.raises(RevisionNotReady, match="version 0.1.0 is already kept"):
        publish(None, None)
    assert json.loads((version_root(OLD) / "version.json").read_text())["data_version"] == OLD
