"""The sandbox's limits, /input checks and scores read-back at their edges.

What mutation testing of `runner.sandbox` showed untested: each limit's
smallest allowed value, outcome-like keys nested in lists and in a library
item's metadata, the item a refusal names, and what a library item's meta.json
holds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from runner.sandbox import defaults
from runner.sandbox.base import Limits, SandboxConfigError
from runner.sandbox.demo import demo_data
from runner.sandbox.protocol import ProtocolError, prepare_input


@pytest.fixture
def demo():
    return demo_data(n_experiences=2, n_scenes=3)


# ------------------------------------------------------------------ limits

SMALLEST = {"wall_seconds": 0.1, "memory_bytes": 16 * defaults.MIB, "pids": 1, "cpus": 0.01,
            "output_bytes": 4096, "tmp_bytes": 4096}
BELOW = {"wall_seconds": 0.09, "memory_bytes": 16 * defaults.MIB - 1, "pids": 0, "cpus": 0.009,
         "output_bytes": 4095, "tmp_bytes": 4095}


def test_each_limit_accepts_its_smallest_value():
    limits = Limits(**SMALLEST)
    assert [getattr(limits, name) for name in SMALLEST] == list(SMALLEST.values())


@pytest.mark.parametrize("name", sorted(BELOW))
def test_each_limit_refuses_a_value_just_below_its_smallest(name):
    with pytest.raises(SandboxConfigError) as refused:
        Limits(**{**SMALLEST, name: BELOW[name]})
    assert str(refused.value) == (f"limits field '{name}': value {BELOW[name]!r} must be a "
                                  f"number >= {SMALLEST[name]}")


# ------------------------------------------------------------------ /input


def _replace(item, **change):
    return type(item)(**{**item.__dict__, **change})


@pytest.mark.parametrize("meta, where, key", [
    ({"runs": [{"note": 1}, {"reward": 0.5}]}, "library item 'demo-e000'.runs", "reward"),
    ({"episodes": ({"steps": [{"Transfer": 1}]},)}, "library item 'demo-e000'.episodes.steps",
     "Transfer"),
    ({"SUCCESS": True}, "library item 'demo-e000'", "SUCCESS"),
])
def test_outcome_keys_in_a_library_items_metadata_are_refused(tmp_path, demo, meta, where, key):
    """Wherever they sit: at the top, in a list of records, in a tuple of them."""
    setting, library, scenes = demo
    bad = _replace(library[0], meta=meta)
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, [bad, library[1]], scenes)
    assert str(refused.value) == (f"{where}: field '{key}' looks like an outcome and may not "
                                  f"be given to a selector")
    assert not (tmp_path / "in" / "library" / "demo-e000").exists()


def test_a_library_items_refusals_name_the_item(tmp_path, demo):
    setting, library, scenes = demo
    cases = [(_replace(library[1], base_png=b"GIF89a"),
              "library item 'demo-e001': the image is not PNG data"),
             (_replace(library[1], object_positions={"cubeA": [0.0, 1.0]}),
              "library item 'demo-e001': field 'object_positions.cubeA' value [0.0, 1.0] must "
              "be three finite numbers")]
    for n, (bad, message) in enumerate(cases):
        with pytest.raises(ProtocolError) as refused:
            prepare_input(tmp_path / f"in{n}", setting, [library[0], bad], scenes)
        assert str(refused.value) == message


def test_a_library_items_meta_json_holds_its_id_positions_and_metadata(tmp_path, demo):
    setting, library, scenes = demo
    item = _replace(library[0], meta={"task": "demo", "camera": "front"})
    root = prepare_input(tmp_path / "in", setting, [item, library[1]], scenes)
    meta = json.loads((root / "library" / "demo-e000" / "meta.json").read_text())
    assert meta == {"task": "demo", "camera": "front", "experience_id": "demo-e000",
                    "object_positions": {name: list(map(float, xyz))
                                         for name, xyz in item.object_positions.items()}}


def test_trajectories_of_every_numeric_kind_are_written_and_others_refused(tmp_path, demo):
    setting, library, scenes = demo
    arrays = {"flags": np.array([True, False]), "steps": np.arange(3, dtype=np.int16),
              "ticks": np.arange(2, dtype=np.uint32), "eef_pos": np.zeros((2, 3))}
    root = prepare_input(tmp_path / "in", setting,
                         [_replace(library[0], trajectory=arrays), library[1]], scenes)
    with np.load(root / "library" / "demo-e000" / "trajectory.npz", allow_pickle=False) as npz:
        assert {name: npz[name].dtype for name in npz.files} == \
            {name: array.dtype for name, array in arrays.items()}
    for n, bad in enumerate((np.array([1j]), np.array(["a"]), np.array([b"a"]))):
        with pytest.raises(ProtocolError, match=f"has dtype {bad.dtype}; only numeric"):
            prepare_input(tmp_path / f"bad{n}", setting,
                          [_replace(library[0], trajectory={"x": bad}), library[1]], scenes)



@pytest.mark.parametrize("bad_id", [".", "..", "e/1", "", "e\0"])
def test_an_id_that_is_no_plain_directory_name_is_refused(tmp_path, demo, bad_id):
    """Before anything is written: "." and ".." would write into library/ itself or the
    tree above it, and a NUL byte cannot be in a path at all."""
    setting, library, scenes = demo
    unsafe = type(setting)(setting.setting_id, setting.task, setting.experience_ids,
                           (bad_id, *setting.scene_ids[1:]))
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", unsafe, library, [_replace(scenes[0], scene_id=bad_id),
                                                           *scenes[1:]])
    assert str(refused.value) == f"field 'scene_ids': value {bad_id!r} cannot be a directory name"
    assert not (tmp_path / "in").exists()


def test_a_scenes_meta_json_holds_its_ids_draw_positions_and_metadata(tmp_path, demo):
    setting, library, scenes = demo
    scene = _replace(scenes[1], meta={"camera": "front"}, layout_level=np.int64(3),
                     appearance_draw=np.int8(1))
    root = prepare_input(tmp_path / "in", setting, library, [scenes[0], scene, scenes[2]])
    meta = json.loads((root / "scenes" / "demo-q001" / "meta.json").read_text())
    assert meta == {"camera": "front", "scene_id": "demo-q001", "state_id": "demo-state000",
                    "layout_level": 3, "appearance_draw": 1,
                    "object_positions": {name: list(map(float, xyz))
                                         for name, xyz in scene.object_positions.items()}}


def test_a_scenes_bad_positions_are_refused_naming_the_scene(tmp_path, demo):
    setting, library, scenes = demo
    bad = _replace(scenes[2], object_positions={"cubeB": [0.0, float("inf"), 1.0]})
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, library, [*scenes[:2], bad])
    assert str(refused.value) == ("scene 'demo-q002': field 'object_positions.cubeB' value "
                                  "[0.0, inf, 1.0] must be three finite numbers")


def test_ids_out_of_order_are_refused_naming_the_first_five(tmp_path):
    setting, library, scenes = demo_data(n_experiences=2, n_scenes=7)
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, library, scenes[::-1])
    given = [f"demo-q{j:03d}" for j in (6, 5, 4, 3, 2)]
    expected = [f"demo-q{j:03d}" for j in range(5)]
    assert str(refused.value) == (f"field 'scene_ids': the items given {given}... are not the "
                                  f"setting's {expected}... in order")


def test_the_input_directory_and_its_parents_are_created(tmp_path, demo):
    root = prepare_input(tmp_path / "runs" / "r1" / "in", *demo)
    assert json.loads((root / "setting.json").read_text())["q"] == 3


def test_a_scores_file_of_exactly_the_cap_is_read(tmp_path):
    from runner.sandbox.protocol import read_output

    (tmp_path / "scores.csv").write_bytes(b"scene_id,experience_id,score\nq0,e0,1\n")
    size = (tmp_path / "scores.csv").stat().st_size
    scores = read_output(tmp_path, ["e0"], ["q0"], max_bytes=size)
    assert scores.scores.tolist() == [[1.0]]
