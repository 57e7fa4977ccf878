"""Bank generation at small scale (the same code as the real run) and the bank reader."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from expaudit.errors import DataNotFound, InvalidInput

GRID = {"values": [-60.0, -30.0, 0.0, 30.0, 60.0, 90.0], "percentiles": [10.0, 90.0],
        "train_natural_steps": 0, "natural_percentiles": {}}


@pytest.fixture(scope="module")
def small_bank(tmp_path_factory):
    """One stack initialization of train and of confirm, generated and assembled."""
    from benchmark_data.generation import readout_banks as gen

    base = tmp_path_factory.mktemp("bank")
    work, out, sealed = base / "work", base / "out", base / "sealed"
    work.mkdir()
    (work / "grid.json").write_text(json.dumps(GRID))
    bank = gen.generate("stack", ["train", "confirm"], limit=1, work=work, out=out, sealed=sealed)
    return bank, work, out, sealed


pytestmark = [pytest.mark.sim, pytest.mark.slow]


def test_files_of_the_contract_are_written(small_bank):
    from benchmark_data.readout_banks import LABEL_COLUMNS, OBSERVATION_COLUMNS

    bank, _, out, sealed = small_bank
    obs = pd.read_parquet(out / "observations.parquet")
    labels = pd.read_parquet(out / "labels.parquet")
    assert list(obs.columns) == OBSERVATION_COLUMNS and list(labels.columns) == LABEL_COLUMNS
    assert set(obs["split"]) == {"train", "confirm"} and set(labels["split"]) == {"train"}
    assert bank["validation"]["train"]["cells"] == 24
    assert bank["grid"]["values"] == GRID["values"] and bank["code_version"] == "readout-bank/1"
    with np.load(out / obs.loc[obs["shard"] != "", "shard"].iloc[0]) as z:
        assert z["agentview"].shape[1:] == (64, 64, 3) and z["wrist"].dtype == np.uint8
    assert all(size < 15_000_000 for size in bank["shards"].values())


def test_sealed_labels_stay_out_of_the_bank_and_ids_are_opaque(small_bank):
    import hashlib

    bank, _, out, sealed = small_bank
    obs = pd.read_parquet(out / "observations.parquet")
    confirm = obs[obs["split"] == "confirm"]
    assert not any("confirm" in p.name for p in out.glob("*.parquet"))
    local = confirm["observation_id"].str.removeprefix("stack-confirm-")
    assert local.str.fullmatch("[0-9a-f]{20}").all()
    data = (sealed / "stack-v1-labels.parquet").read_bytes()
    assert hashlib.sha256(data).hexdigest() == bank["sealed_labels_sha256"]
    assert set(pd.read_parquet(sealed / "stack-v1-labels.parquet")["split"]) == {"confirm"}


def test_rerun_resumes_and_reproduces_the_sealed_labels(small_bank):
    from benchmark_data.generation import readout_banks as gen

    bank, work, out, sealed = small_bank
    before = {p.name: p.stat().st_mtime_ns for p in work.glob("*-00.*")}
    again = gen.generate("stack", ["train", "confirm"], limit=1, work=work, out=out, sealed=sealed)
    assert {p.name: p.stat().st_mtime_ns for p in work.glob("*-00.*")} == before  # nothing redone
    assert again["sealed_labels_sha256"] == bank["sealed_labels_sha256"]
    for chunk in work.glob("confirm-00.*"):
        chunk.unlink()
    regenerated = gen.generate("stack", ["train", "confirm"], limit=1, work=work, out=out, sealed=sealed)
    assert regenerated["sealed_labels_sha256"] == bank["sealed_labels_sha256"]  # deterministic


def test_reader_checks_the_sealed_labels_hash(small_bank, monkeypatch, tmp_path):
    from benchmark_data import readout_banks as reader

    _, _, out, sealed = small_bank
    root = tmp_path / "root"
    (root / "readout").mkdir(parents=True)
    (root / "readout" / "stack-v1").symlink_to(out)
    assert set(reader.read_labels("stack", root)["split"]) == {"train"}
    both = reader.read_labels("stack", root, sealed=sealed, include_sealed=True)
    assert set(both["split"]) == {"train", "confirm"}
    with pytest.raises(DataNotFound, match="sealed labels"):
        reader.read_labels("stack", root, sealed=tmp_path, include_sealed=True)
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    frame = pd.read_parquet(sealed / "stack-v1-labels.parquet")
    frame.loc[0, "coordinate"] += 1.0
    frame.to_parquet(tampered / "stack-v1-labels.parquet", index=False)
    with pytest.raises(InvalidInput, match="sha256"):
        reader.read_labels("stack", root, sealed=tampered, include_sealed=True)
    ids = reader.read_observations("stack", root).query("shard != ''")["observation_id"][:3]
    images = reader.read_images("stack", ids, root)
    assert images["agentview"].shape == (3, 64, 64, 3)


def test_a_torn_chunk_is_never_read(small_bank, tmp_path):
    """A chunk whose table was never renamed into place is made again, not assembled."""
    from benchmark_data.generation import readout_banks as gen

    _, work, _, _ = small_bank
    assert not list(work.glob("*.tmp"))
    table, images = gen.chunk_paths(work, "train", 0)
    assert gen._complete_splits(work, 1) == ["train", "confirm"]
    table.rename(table.with_name(table.name + ".123.tmp"))
    try:
        assert gen._complete_splits(work, 1) == ["confirm"]
    finally:
        table.with_name(table.name + ".123.tmp").rename(table)


def test_every_chunk_records_its_mechanism_and_another_one_is_never_assembled(small_bank):
    """The bank's one `code_version` holds for every row: assembly refuses a chunk made under
    another mechanism version, or one that recorded none."""
    from benchmark_data.generation import readout_banks as gen

    bank, work, out, sealed = small_bank
    assert bank["code_version"] == gen.code_version()
    for split in ("train", "confirm"):
        assert gen.chunk_version_path(work, split, 0).read_text() == gen.code_version()
    path = gen.chunk_version_path(work, "confirm", 0)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    try:
        path.write_text("readout-bank/0")
        with pytest.raises(InvalidInput, match="chunk confirm-00: made under mechanism readout-bank/0"):
            gen.assemble("stack", work=work, out=out, sealed=sealed, limit=1)
        path.unlink()
        with pytest.raises(InvalidInput, match="chunk confirm-00: made under mechanism unrecorded"):
            gen.assemble("stack", work=work, out=out, sealed=sealed, limit=1)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing written
    finally:
        path.write_text(gen.code_version())
