"""An earlier data version stays downloadable by its version (issue 38): `?data_version=0.1.0`
on a Door policy setting's outcomes, scenes and query images serves the files data version
0.1.0 published, described as that version; the current version is the default."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pandas as pd
import pytest

from benchmark_data.downloads import METADATA_PREFIX, parquet_description
from benchmark_data.frozen import load_transfer
from benchmark_data.image_archive import iter_pngs
from benchmark_data.paths import FROZEN_ROOT
from benchmark_data.versions import DATA_VERSION, load_transfer_at, version_root
from tests.support.responses import get_ok

SETTING = "door-policy-k3-orig"
OLD = "0.1.0"


def _npz_outcomes(data: bytes) -> np.ndarray:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return npz["outcomes"]


def test_outcomes_of_each_version_are_that_versions_tensor(client):
    current = _npz_outcomes(get_ok(client, f"/api/v1/settings/{SETTING}/outcomes?format=npz").data)
    old = _npz_outcomes(get_ok(client, f"/api/v1/settings/{SETTING}/outcomes?format=npz&data_version={OLD}").data)
    assert np.array_equal(current, load_transfer(SETTING).outcomes)
    assert np.array_equal(old, load_transfer_at(SETTING, OLD).outcomes)
    assert not np.array_equal(old, current)
    named = _npz_outcomes(get_ok(client, f"/api/v1/settings/{SETTING}/outcomes?format=npz"
                                       f"&data_version={DATA_VERSION}").data)
    assert np.array_equal(named, current)


def test_tables_say_which_version_they_are(client):
    old = get_ok(client, f"/api/v1/settings/{SETTING}/scenes?format=parquet&data_version={OLD}")
    new = get_ok(client, f"/api/v1/settings/{SETTING}/scenes?format=parquet")
    assert parquet_description(old.data)[METADATA_PREFIX + "data_version"] == OLD
    assert parquet_description(new.data)[METADATA_PREFIX + "data_version"] == DATA_VERSION
    assert list(pd.read_parquet(io.BytesIO(old.data)).scene_id) == list(pd.read_parquet(io.BytesIO(new.data)).scene_id)


def test_query_images_of_the_old_version_are_its_archive(client):
    old = get_ok(client, f"/api/v1/settings/{SETTING}/archives/images?data_version={OLD}").data
    new = get_ok(client, f"/api/v1/settings/{SETTING}/archives/images").data
    assert old == (version_root(OLD) / "query_sets" / "door-orig" / "images.tar").read_bytes()
    with tarfile.open(fileobj=io.BytesIO(old)) as a, tarfile.open(fileobj=io.BytesIO(new)) as b:
        assert a.getnames() == b.getnames()
    old_png = dict(iter_pngs(version_root(OLD) / "query_sets" / "door-orig" / "images.tar"))
    new_png = dict(iter_pngs(FROZEN_ROOT / "query_sets" / "door-orig" / "images.tar"))
    assert new == (FROZEN_ROOT / "query_sets" / "door-orig" / "images.tar").read_bytes()
    changed = {k for k in old_png if old_png[k] != new_png[k]}
    assert {k.rsplit("-d", 1)[0] for k in changed} == {f"door-orig-s{i}" for i in range(20, 30)}


def test_an_unknown_data_version_is_refused_naming_the_field(client):
    response = client.get(f"/api/v1/settings/{SETTING}/outcomes?data_version=9.9")
    assert response.status_code == 422
    body = response.get_json()
    assert body["error"]["field"] == "data_version" and "['0.1.0', '0.2.0', '0.3.0']" in body["error"]["message"], body
