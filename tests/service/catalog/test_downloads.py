"""Every download of a benchmark setting, fetched over the API, says what it is: the setting
document lists them all, each file is named after its setting, the tables carry the setting,
data version and licence, and the library archive holds the setting's K experiences only."""

from __future__ import annotations

import io
import json
import re
import tarfile

import h5py
import numpy as np
import pytest

from benchmark_data.downloads import DOWNLOADS, METADATA_PREFIX, data_version, parquet_description
from benchmark_data.registry import get_setting
from tests.support.responses import get_ok

SETTING = "stack-replay-k10-a"
SEALED = "stack-replay-k10-hidden"


def _file_name(response) -> str:
    match = re.fullmatch(r'attachment; filename="([^"]+)"',
                         response.headers.get("Content-Disposition", ""))
    assert match, response.headers
    return match.group(1)


def test_the_setting_document_lists_every_download(client):
    document = get_ok(client, f"/api/v1/settings/{SETTING}").json
    assert set(document["downloads"]) == set(DOWNLOADS)
    for key, url in document["downloads"].items():
        assert url == f"/api/v1/{DOWNLOADS[key].path(SETTING)}"
    sealed = get_ok(client, f"/api/v1/settings/{SEALED}").json
    assert set(sealed["downloads"]) == set(DOWNLOADS) - {"outcomes"}


@pytest.mark.parametrize("what", ["outcomes", "scenes", "experiences"])
def test_parquet_tables_carry_setting_version_and_licence(client, what):
    response = get_ok(client, f"/api/v1/settings/{SETTING}/{what}?format=parquet")
    assert _file_name(response) == f"{SETTING}-{what}.parquet"
    fields = parquet_description(response.data)
    assert fields[METADATA_PREFIX + "setting_id"] == SETTING
    assert fields[METADATA_PREFIX + "download"] == what
    assert fields[METADATA_PREFIX + "data_version"] == data_version()
    assert fields[METADATA_PREFIX + "license"] == "MIT"
    assert len(fields[METADATA_PREFIX + "data_fingerprint"]) == 64


def test_npz_outcomes_carry_the_same_description(client):
    response = get_ok(client, f"/api/v1/settings/{SETTING}/outcomes?format=npz")
    assert _file_name(response) == f"{SETTING}-outcomes.npz"
    with np.load(io.BytesIO(response.data), allow_pickle=False) as npz:
        fields = json.loads(str(npz["metadata"]))
        assert npz["outcomes"].shape[0] == 10
    assert fields[METADATA_PREFIX + "setting_id"] == SETTING
    assert fields[METADATA_PREFIX + "license"] == "MIT"


def test_archives_are_named_after_the_setting(client):
    images = get_ok(client, f"/api/v1/settings/{SETTING}/archives/images")
    assert _file_name(images) == f"{SETTING}-query-images.tar"
    with tarfile.open(fileobj=io.BytesIO(images.data)) as tar:
        assert len(tar.getnames()) == 200
    for route, name in (("base-images", "base_images.tar"), ("selector-input", "input.tar.gz")):
        assert _file_name(get_ok(client, f"/api/v1/settings/{SETTING}/{route}")) == \
            f"{SETTING}-{name}"


def test_library_archive_holds_only_the_settings_k_experiences(client):
    response = get_ok(client, f"/api/v1/settings/{SETTING}/archives/library")
    assert _file_name(response) == f"{SETTING}-library-demos.hdf5"
    with h5py.File(io.BytesIO(response.data), "r") as library:
        ids = [library["data"][name].attrs["experience_id"] for name in library["data"]]
        assert ids == list(get_setting(SETTING).experience_ids)  # 10, not the stream's 60
        assert library.attrs[METADATA_PREFIX + "setting_id"] == SETTING
        assert library.attrs[METADATA_PREFIX + "license"] == "MIT"
