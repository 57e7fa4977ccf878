"""The selector protocol: the /input tree written, the scores file read back and validated."""

from __future__ import annotations

import io
import json
import os
import stat

import numpy as np
import pytest
from PIL import Image

from leaderboard.errors import InputError
from sandbox.demo import demo_input, png_bytes
from sandbox.protocol import (LibraryItem, ProtocolError, QueryScene, SettingInfo,
                                     prepare_input, read_output)


def _write_scores(directory, rows, header="scene_id,experience_id,score"):
    directory.mkdir(exist_ok=True)
    (directory / "scores.csv").write_text("\n".join([header, *rows]) + "\n")
    return directory


def test_input_tree_layout_and_permissions(tmp_path, small_demo):
    setting, library, scenes = small_demo
    root = prepare_input(tmp_path / "in", setting, library, scenes)
    info = json.loads((root / "setting.json").read_text())
    assert info == {"protocol_version": 1, "setting_id": "demo", "task": "demo", "k": 2, "q": 3,
                    "experience_ids": ["demo-e000", "demo-e001"],
                    "scene_ids": ["demo-q000", "demo-q001", "demo-q002"]}
    assert sorted(p.name for p in (root / "library" / "demo-e001").iterdir()) == \
        ["base.png", "meta.json", "trajectory.npz"]
    meta = json.loads((root / "scenes" / "demo-q002" / "meta.json").read_text())
    assert meta["state_id"] == "demo-state001" and meta["layout_level"] == 2
    assert meta["appearance_draw"] == 0 and set(meta["object_positions"]) == {"cube_a", "cube_b"}
    with np.load(root / "library" / "demo-e000" / "trajectory.npz", allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["eef_pos"], library[0].trajectory["eef_pos"])
    for path in root.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), path
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    with Image.open(root / "scenes" / "demo-q000" / "image.png") as image:
        assert image.mode == "RGB" and image.size == (24, 24)


def test_png_bytes_round_trips_through_pillow():
    rgb = np.random.default_rng(3).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    with Image.open(io.BytesIO(png_bytes(rgb))) as image:
        np.testing.assert_array_equal(np.asarray(image), rgb)
    with pytest.raises(ValueError, match=r"array shape \(5, 7\) is not \(H, W, 3\)"):
        png_bytes(rgb[:, :, 0])


def test_outcome_metadata_is_refused(tmp_path, small_demo):
    setting, library, scenes = small_demo
    bad = QueryScene(**{**scenes[0].__dict__, "meta": {"extra": {"Success_rate": 0.4}}})
    with pytest.raises(ProtocolError, match=r"scene 'demo-q000'.extra: field 'Success_rate' "
                                            r"looks like an outcome"):
        prepare_input(tmp_path / "in", setting, library, [bad, *scenes[1:]])
    bad_lib = LibraryItem(**{**library[0].__dict__,
                             "trajectory": {"rewards": np.zeros(3)}})
    with pytest.raises(ProtocolError, match="library item 'demo-e000': field 'rewards'"):
        prepare_input(tmp_path / "in2", setting, [bad_lib, library[1]], scenes)


@pytest.mark.parametrize("change, message", [
    ({"image_png": b"GIF89a"}, "scene 'demo-q000': the image is not PNG data"),
    ({"object_positions": {"cubeA": [0.0, 1.0]}},
     r"field 'object_positions.cubeA' value \[0.0, 1.0\] must be three finite numbers"),
    ({"object_positions": {"cubeA": [0.0, float("nan"), 1.0]}}, "must be three finite numbers"),
])
def test_bad_scene_data_is_refused(tmp_path, small_demo, change, message):
    setting, library, scenes = small_demo
    bad = QueryScene(**{**scenes[0].__dict__, **change})
    with pytest.raises(ProtocolError, match=message):
        prepare_input(tmp_path / "in", setting, library, [bad, *scenes[1:]])


def test_order_ids_and_arrays_are_checked(tmp_path, small_demo):
    setting, library, scenes = small_demo
    with pytest.raises(ProtocolError, match="field 'scene_ids': the items given"):
        prepare_input(tmp_path / "a", setting, library, scenes[::-1])
    with pytest.raises(ProtocolError, match="field 'experience_ids'"):
        prepare_input(tmp_path / "b", setting, library[:1], scenes)
    unsafe = SettingInfo("s", "t", ("../e",), setting.scene_ids)
    item = LibraryItem(**{**library[0].__dict__, "experience_id": "../e"})
    with pytest.raises(ProtocolError, match=r"field 'experience_ids': value '../e' cannot be"):
        prepare_input(tmp_path / "c", unsafe, [item], scenes)
    objects = LibraryItem(**{**library[0].__dict__,
                             "trajectory": {"eef_pos": np.array([object()])}})
    with pytest.raises(ProtocolError, match=r"field 'trajectory.eef_pos' has dtype object"):
        prepare_input(tmp_path / "d", setting, [objects, library[1]], scenes)
    demo_input(tmp_path / "e", n_experiences=2, n_scenes=3)
    with pytest.raises(ProtocolError, match="input directory '.*e' is not empty"):
        prepare_input(tmp_path / "e", setting, library, scenes)


def test_read_output_returns_scores_in_library_scene_order(tmp_path):
    out = _write_scores(tmp_path / "out", ["q1,e1,0.5", "q0,e0,-1", "q0,e1,2", "q1,e0,3.25"])
    scores = read_output(out, ["e0", "e1"], ["q0", "q1"])
    np.testing.assert_array_equal(scores.scores, [[-1.0, 3.25], [2.0, 0.5]])
    assert not scores.selection_only


def test_read_output_rejects_missing_links_and_special_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="/output/scores.csv: the selector wrote no scores file"):
        read_output(out, ["e0"], ["q0"])
    (out / "scores.csv").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="value '/etc/passwd' is a symbolic link; links are"):
        read_output(out, ["e0"], ["q0"])
    (out / "scores.csv").unlink()
    os.mkfifo(out / "scores.csv")
    with pytest.raises(InputError, match="/output/scores.csv: is not a regular file"):
        read_output(out, ["e0"], ["q0"])


def test_read_output_rejects_oversize_and_bad_contents(tmp_path):
    out = _write_scores(tmp_path / "out", ["q0,e0,1"] * 50)
    with pytest.raises(InputError, match=r"/output/scores.csv: is \d+ bytes, over the cap of 100"):
        read_output(out, ["e0"], ["q0"], max_bytes=100)
    _write_scores(out, ["q0,e0,nan"])
    with pytest.raises(InputError, match="line 2, field 'score': value 'nan' is not a finite"):
        read_output(out, ["e0"], ["q0"])
    _write_scores(out, ["q0,e9,1"])
    with pytest.raises(InputError, match="field 'experience_id': value 'e9' is not a known"):
        read_output(out, ["e0"], ["q0"])
    (out / "scores.csv").write_bytes(b"")
    with pytest.raises(InputError, match="file is empty"):
        read_output(out, ["e0"], ["q0"])
    (out / "scores.csv").write_bytes(b'scene_id,experience_id,score\n"q0,e0,1\n')
    with pytest.raises(InputError, match="cannot be read as CSV"):
        read_output(out, ["e0"], ["q0"])
