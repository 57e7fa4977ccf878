"""docs/selector_protocol.md matches the code and the data: its generated block (settings,
schemas, limits) is what the code writes today, and its example selector runs on the real
/input tree of every setting that takes selectors, built by the service's builder."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from benchmark_data.image_archive import query_images_path
from benchmark_data.registry import SETTINGS, get_setting
from sandbox.protocol import read_output
from service.catalog.protocol_doc import (BEGIN, DOC, END, DocMarkersMissing, committed_block,
                                          generated_block, write_doc)
from service.catalog.selector_input import TASK_SCHEMAS, prepare_setting_input, takes_selectors
from service.process import defaults
from service.process.config import ServiceConfig

EXAMPLE_MARKER = "<!-- example selector:"
SELECTOR_SETTINGS = tuple(s for s in SETTINGS if takes_selectors(s))
"""Every setting that takes selectors (a tree takes well under a second to build)."""


def test_the_committed_doc_holds_the_generated_block():
    assert committed_block() == generated_block(), \
        "docs/selector_protocol.md is stale: run scripts/selector_protocol_doc.py"


def test_write_doc_replaces_the_block_and_keeps_the_rest(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"# head\n\n{BEGIN}\nstale\n{END}\n\ntail\n")
    assert write_doc(doc) is True
    text = doc.read_text()
    assert text.startswith("# head\n\n") and text.endswith("\n\ntail\n")
    assert committed_block(doc) == generated_block() and "stale" not in text
    assert write_doc(doc) is False
    doc.write_text("# no markers\n")
    with pytest.raises(DocMarkersMissing, match="needs one"):
        write_doc(doc)


def test_the_doc_states_the_limits_the_service_enforces():
    block = committed_block()
    row = next(line for line in block.splitlines() if line.startswith("| wall clock |"))
    default = {f.name: f.default for f in dataclasses.fields(ServiceConfig)}
    assert f"{default['selector_wall_seconds']} s on the service" in row
    assert f"1 to {defaults.SELECTOR_WALL_SECONDS_MAX} s" in row
    assert "cubeA" not in DOC.read_text() and "cubeB" not in DOC.read_text()


def _example_code() -> str:
    text = DOC.read_text()
    after = text[text.index(EXAMPLE_MARKER):]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, "the example selector block is missing"
    return match.group(1)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    path = tmp_path_factory.mktemp("example") / "selector.py"
    path.write_text(_example_code())
    return path


def test_every_task_with_a_schema_has_settings_to_run_the_example_on():
    assert {get_setting(s).task for s in SELECTOR_SETTINGS} == set(TASK_SCHEMAS)


@pytest.mark.parametrize("setting_id", SELECTOR_SETTINGS)
def test_the_doc_example_runs_on_the_real_input_of_every_selector_setting(setting_id, example,
                                                                          tmp_path):
    query_set = get_setting(setting_id).query_set
    if not query_images_path(query_set).is_file():
        pytest.skip(f"frozen images of {query_set} not built")
    schema = TASK_SCHEMAS[get_setting(setting_id).task]
    info = prepare_setting_input(tmp_path / "input", setting_id)
    (tmp_path / "output").mkdir()
    env = {**os.environ, "EXPAUDIT_INPUT": str(tmp_path / "input"),
           "EXPAUDIT_OUTPUT": str(tmp_path / "output")}
    done = subprocess.run([sys.executable, str(example)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    scores = read_output(tmp_path / "output", info.experience_ids, info.scene_ids)
    assert scores.scores.shape == (len(info.experience_ids), len(info.scene_ids))

    # The tree holds what the doc's schema says, and nothing it does not name.
    library_objects = set(schema.objects) - set(schema.scene_only)
    for experience_id in info.experience_ids:
        meta = json.loads((tmp_path / "input" / "library" / experience_id / "meta.json")
                          .read_text())
        assert set(meta["object_positions"]) == library_objects
        assert set(meta["layout"]) == set(schema.layout)
        assert meta["path_columns"] == list(schema.path_columns)
    seen = set()
    for scene_id in info.scene_ids:
        meta = json.loads((tmp_path / "input" / "scenes" / scene_id / "meta.json").read_text())
        assert library_objects <= set(meta["object_positions"]) <= set(schema.objects)
        assert set(meta["layout"]) == set(schema.layout)
        seen |= set(meta["object_positions"])
    assert seen == set(schema.objects)  # the scene-only objects do occur
