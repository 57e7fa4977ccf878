"""The downloads of a setting describe themselves: names with the setting, Parquet metadata,
and a library archive that holds the setting's K experiences only."""

from __future__ import annotations

import io

import h5py
import pandas as pd
import pytest

from benchmark_data.downloads import (DOWNLOADS, LICENSE, METADATA_PREFIX, data_version,
                                      describe, library_archive, offered, parquet_bytes,
                                      parquet_description)
from benchmark_data.paths import library_dir
from benchmark_data.registry import SETTINGS, get_setting
from expaudit.errors import DataNotFound

STREAM = library_dir("stack-stream") / "demos.hdf5"


def test_every_download_is_named_after_its_setting():
    setting = "stack-replay-k10-a"
    names = [d.file_name(setting, fmt) for d in DOWNLOADS.values() for fmt in d.formats or [None]]
    assert len(DOWNLOADS) == 8
    assert all(name.startswith(setting + "-") for name in names), names
    assert "stack-replay-k10-a-query-images.tar" in names
    assert "stack-replay-k10-a-library-demos.hdf5" in names
    assert not {"images.tar", "demos.hdf5", "base_images.tar"} & set(names)


def test_a_sealed_setting_offers_no_outcomes_and_input_files_need_the_tree():
    sealed = get_setting("stack-replay-k10-hidden")
    assert "outcomes" not in {d.key for d in offered(sealed, input_tree=True)}
    public = get_setting("stack-replay-k10-a")
    assert {d.key for d in offered(public, input_tree=True)} == set(DOWNLOADS)
    assert {d.key for d in offered(public, input_tree=False)} == {
        "outcomes", "scenes", "experiences", "query_images", "library"}


def test_describe_names_setting_version_and_licence():
    fields = describe(get_setting("stack-replay-k10-a"), "outcomes", "abc123")
    assert fields[METADATA_PREFIX + "setting_id"] == "stack-replay-k10-a"
    assert fields[METADATA_PREFIX + "data_version"] == data_version() != ""
    assert fields[METADATA_PREFIX + "license"] == LICENSE
    assert fields[METADATA_PREFIX + "k"] == "10"
    assert fields[METADATA_PREFIX + "data_fingerprint"] == "abc123"
    assert "arXiv:2609.26567" in fields[METADATA_PREFIX + "cite_as"]
    with pytest.raises(KeyError, match="download must be one of .* got 'videos'"):
        describe(get_setting("stack-replay-k10-a"), "videos")


def test_parquet_carries_the_description_beside_the_table():
    frame = pd.DataFrame({"experience_id": ["stack-e000", "stack-e001"], "success": [1, 0]})
    metadata = describe(get_setting("stack-replay-k3-orig"), "experiences")
    data = parquet_bytes(frame, metadata)
    assert parquet_description(data) == metadata
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), frame)


@pytest.mark.parametrize("setting_id", ["stack-replay-k10-a", "stack-replay-k10-b",
                                        "stack-replay-k3-orig"])
def test_library_archive_holds_the_settings_k_experiences_in_order(setting_id):
    setting = get_setting(setting_id)
    metadata = describe(setting, "library")
    archive = library_archive(setting, STREAM, metadata)
    with h5py.File(io.BytesIO(archive), "r") as out, h5py.File(STREAM, "r") as stream:
        demos = list(out["data"])
        assert len(demos) == setting.k < len(stream["data"])
        ids = [out["data"][name].attrs["experience_id"] for name in demos]
        assert ids == list(setting.experience_ids)
        assert out["data"].attrs["total"] == sum(
            int(out["data"][name].attrs["num_samples"]) for name in demos)
        assert out["data"].attrs["env_args"] == stream["data"].attrs["env_args"]
        first = demos[0]
        assert (out["data"][first]["actions"][()] == stream["data"][first]["actions"][()]).all()
        assert {k: out.attrs[k] for k in out.attrs} == metadata


def test_library_archive_names_a_missing_experience():
    door = SETTINGS["door-policy-k3-orig"]  # door experiences are not in the Stack stream
    with pytest.raises(DataNotFound, match="has no demonstration of experience 'door-e000'"):
        library_archive(door, STREAM, {})
