"""Rebuilding lost sealed labels: committed observations matched to regenerated cells by both
views' pixels, and the install of the rebuilt file only when its sha256 is bank.json's."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from benchmark_data.generation.readout_sealed import match_rows, require_match
from expaudit.errors import InvalidInput


def _views(rng, n):
    return (rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8), rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8))


@pytest.fixture
def cells():
    """Two initializations of regenerated rows (ids under another key) and the committed rows
    in another order: `a` and `b` of init i0 share their agent view and differ in the wrist
    view; each initialization has one row without images."""
    rng = np.random.default_rng(3)
    agent, wrist = _views(rng, 5)
    agent[1] = agent[0]
    regenerated = pd.DataFrame({"observation_id": [f"x{k}" for k in range(7)],
                                "initialization": ["i0"] * 4 + ["i1"] * 3,
                                "kind": ["natural", "controlled", "controlled", "controlled",
                                         "natural", "controlled", "controlled"],
                                "image": [0, 1, 2, -1, 3, 4, -1],
                                "label": ["a", "b", "c", "d", "e", "f", "g"]})
    order = [2, 1, 0, 3, 6, 4, 5]  # committed row -> regenerated row
    image_of = {0: 0, 1: 1, 2: 2, 4: 3, 5: 4}
    committed_images = [image_of[p] for p in order if p in image_of]
    committed = pd.DataFrame({"observation_id": [f"sealed-{k}" for k in range(7)],
                              "initialization": regenerated["initialization"].to_numpy()[order],
                              "kind": regenerated["kind"].to_numpy()[order],
                              "image": [-1] * 7})
    committed.loc[[k for k, p in enumerate(order) if p in image_of], "image"] = range(len(committed_images))
    views = (agent[committed_images].copy(), wrist[committed_images].copy())
    return committed, views, regenerated, (agent, wrist), order


def test_every_observation_finds_its_own_cell(cells):
    committed, views, regenerated, regen_views, order = cells
    matching = match_rows(committed, views, regenerated, regen_views)
    assert matching.problems == [] and matching.matched == len(committed)
    assert list(matching.positions) == order
    assert list(regenerated["label"].to_numpy()[require_match(matching, "door confirm")]) == \
        ["c", "b", "a", "d", "g", "e", "f"]


def test_rounding_of_another_cpu_matches_and_one_pixel_beyond_it_does_not(cells):
    committed, (agent, wrist), regenerated, regen_views, _ = cells
    rounded = wrist.astype(np.int16)
    rounded[:, ::3, ::2, :] += 2  # another CPU's rasterizer: at most 2 levels off, many pixels
    rounded = np.clip(rounded, 0, 255).astype(np.uint8)
    assert match_rows(committed, (agent, rounded), regenerated, regen_views).problems == []
    wrist[0, 3, 3, 1] = (int(wrist[0, 3, 3, 1]) + 128) % 256  # committed row 0 (cell c): one pixel far off
    matching = match_rows(committed, (agent, wrist), regenerated, regen_views)
    assert matching.matched == len(committed) - 2  # and i0's row without images is not placed
    with pytest.raises(InvalidInput, match=r"5 of 7 observations matched; sealed-0 \(i0\): no regenerated "
                                           r"cell has its pixels; sealed-3 \(i0\): without images, and the "
                                           r"other observations .* i0: 1 regenerated cells with images"):
        require_match(matching, "door confirm")


def test_identical_cells_and_several_rows_without_images_are_errors(cells):
    committed, views, regenerated, (agent, wrist), _ = cells
    twins, seen = wrist.copy(), views[1].copy()
    twins[1], seen[1] = twins[0], seen[2]  # cells a and b (sealed-2, sealed-1) now look the same
    with pytest.raises(InvalidInput, match="sealed-1 \\(i0\\): 2 regenerated cells have its pixels"):
        require_match(match_rows(committed, (views[0], seen), regenerated, (agent, twins)), "door confirm")
    blind = regenerated.assign(image=regenerated["image"].where(regenerated["label"] != "e", -1))
    hidden = committed.assign(image=committed["image"].where(committed["observation_id"] != "sealed-5", -1))
    with pytest.raises(InvalidInput, match="i1: 2 observations without images cannot be told apart"):
        require_match(match_rows(hidden, views, blind, (agent, wrist)), "door eval")


@pytest.mark.sim
@pytest.mark.slow
def test_rebuilt_labels_of_a_small_bank_are_the_lost_file_byte_for_byte(tmp_path):
    """One door initialization of confirm, generated with the committed bank's grid; its sealed
    labels and id key are then lost and rebuilt from the images alone."""
    from benchmark_data.generation import readout_banks as gen
    from benchmark_data.readout_banks import bank_dir, sealed_labels_path

    work, sealed = tmp_path / "work", tmp_path / "sealed"
    out = tmp_path / "root" / "readout" / "door-v1"
    work.mkdir()
    (work / "grid.json").write_text(json.dumps(json.loads((bank_dir("door") / "bank.json").read_text())["grid"]))
    bank = gen.generate("door", ["confirm"], limit=1, work=work, out=out, sealed=sealed)
    lost = sealed_labels_path("door", sealed).read_bytes()
    shutil.rmtree(sealed)

    again = tmp_path / "sealed-again"
    report = gen.rebuild_sealed_labels("door", root=tmp_path / "root", work=tmp_path / "rebuild",
                                       sealed=again, limit=1)
    installed = sealed_labels_path("door", again).read_bytes()
    assert installed == lost and report["sha256"] == bank["sealed_labels_sha256"]
    assert not (again / gen.KEY_NAME).exists()  # the lost key is not replaced by another one

    sealed_labels_path("door", again).unlink()
    record = json.loads((out / "bank.json").read_text())
    record["sealed_labels_sha256"] = hashlib.sha256(b"another file").hexdigest()
    (out / "bank.json").write_text(json.dumps(record))
    with pytest.raises(InvalidInput, match="sha256 .* differs from bank.json's sealed_labels_sha256"):
        gen.rebuild_sealed_labels("door", root=tmp_path / "root", work=tmp_path / "rebuild", sealed=again,
                                  limit=1)
    assert not list(again.glob("*"))  # nothing half-written at the sealed path
