"""The dataset card: Croissant metadata that matches the frozen files, and its README."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from benchmark_data.generation.dataset_card import CARD_PATH, CONFORMS_TO, card_bytes, croissant_document
from benchmark_data.paths import root_or_default
from benchmark_data.readout_banks import TASKS
from benchmark_data.registry import SETTINGS


@pytest.fixture(scope="module")
def card() -> dict:
    return croissant_document()


def test_committed_card_is_the_generated_one():
    assert CARD_PATH.read_bytes() == card_bytes(), (
        "benchmark_data/dataset/croissant.json is stale: run python -m benchmark_data.generation.dataset_card")


def test_every_frozen_file_is_described_with_its_checksum(card):
    manifest = json.loads((root_or_default(None) / "manifest.json").read_text())
    objects = {o["@id"]: o for o in card["distribution"]}
    assert set(objects) == set(manifest["files"])
    for path, entry in manifest["files"].items():
        assert objects[path]["sha256"] == entry["sha256"]
        assert objects[path]["contentSize"] == f"{entry['bytes']} B"
        assert objects[path]["@type"] == "cr:FileObject"


def test_fields_point_at_real_columns(card):
    root = root_or_default(None)
    objects = {o["@id"] for o in card["distribution"]}
    ids = [r["@id"] for r in card["recordSet"]]
    assert len(ids) == len(set(ids))
    tables = [r for r in card["recordSet"] if r["@id"] != "settings"]
    assert {r["@id"].split("/")[0] for r in tables} == {"outcomes", "scenes", "experiences", "readout"}
    for record_set in tables:
        for field in record_set["field"]:
            source = field["source"]["fileObject"]["@id"]
            assert source in objects
            assert field["source"]["extract"]["column"] in pq.read_schema(root / source).names
        names = {f["name"] for f in record_set["field"]}
        if record_set["@id"].startswith("outcomes/"):
            assert {"experience_id", "state_id", "seed", "success"} <= names


def test_settings_are_the_registry(card):
    settings = next(r for r in card["recordSet"] if r["@id"] == "settings")
    rows = {row["settings/setting_id"]: row for row in settings["data"]}
    assert set(rows) == set(SETTINGS)
    hidden = rows["stack-replay-k10-hidden"]
    assert hidden["settings/sealed"] is True and hidden["settings/k"] == 10
    assert not any(o["@id"].startswith("cells/") and "stack-hidden" in o["@id"]
                   for o in card["distribution"])  # sealed outcomes are not distributed


def test_readout_banks_have_observation_and_public_label_records(card):
    """Each bank's observations and labels are RecordSets; the labels file they read holds
    train and dev rows alone and the card says the others are sealed."""
    root = root_or_default(None)
    records = {r["@id"]: r for r in card["recordSet"]}
    for bank in [f"{task}-{version}" for version in ("v1", "v2") for task in TASKS]:
        observations, labels = records[f"readout/{bank}/observations"], records[f"readout/{bank}/labels"]
        assert {"observation_id", "split", "shard"} <= {f["name"] for f in observations["field"]}
        assert {"observation_id", "coordinate", "split"} <= {f["name"] for f in labels["field"]}
        source = labels["field"][0]["source"]["fileObject"]["@id"]
        assert source == f"readout/{bank}/labels.parquet"
        splits = set(pq.read_table(root / source, columns=["split"]).column("split").to_pylist())
        assert splits == {"train", "dev"}
        assert "sealed" in labels["description"]
    readme = (CARD_PATH.parent / "README.md").read_text()
    assert "## Readout banks" in readme
    for task in TASKS:
        assert f"| {task}-readout-v1 |" in readme and f"| {task}-readout-v2 |" in readme


def test_card_header_and_readme(card):
    assert card["@type"] == "sc:Dataset" and card["conformsTo"] == CONFORMS_TO
    assert card["license"] and card["citeAs"] and card["description"]
    readme = (CARD_PATH.parent / "README.md").read_text()
    assert "croissant.json" in readme
    for setting_id in SETTINGS:
        assert f"| {setting_id} |" in readme, setting_id


def test_readme_labels_each_setting_by_the_rule_with_the_papers_bar_beside():
    """The card's settings table states what the frozen tensors give: headroom_cf with its
    interval, the noise-aware label, and the paper's bar."""
    import numpy as np

    from benchmark_data.frozen import load_transfer
    from leaderboard.metrics.discrimination import setting_label

    readme = (CARD_PATH.parent / "README.md").read_text()
    for setting in SETTINGS.values():
        if setting.sealed:
            continue
        row = next(line for line in readme.splitlines() if line.startswith(f"| {setting.id} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        data = load_transfer(setting.id)
        label = setting_label(data.outcomes, np.asarray(data.scenes.state_ids))
        interval = label.headroom_cf
        assert cells[6] == f"{label.noise.headroom_cf:.3f} [{interval.low:.3f}, {interval.high:.3f}]", row
        assert cells[7].startswith("yes" if label.discriminates else "no:"), row
        gap = label.oracle - label.random
        assert cells[8] == f"{'met' if label.paper_discriminates else 'missed'} ({gap:.3f})", row
