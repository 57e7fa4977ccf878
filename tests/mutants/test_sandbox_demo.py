"""The demo /input tree (`expaudit selector demo-input`) as a user relies on it.

What mutation testing of `sandbox.demo` showed untested: the tree of
the default demo (the one docs/selector_protocol.md shows, with raw32's
scores on it), its sizes and seed, each scene a perturbed copy of experience
j mod K (noise of a few levels, objects within a centimetre), the scene
metadata, the library's metadata and trajectories, a PNG that any decoder
accepts (each chunk's CRC), and the same tree from `demo_input` as from
`demo_data` for the same arguments. And the limits docs/selector_protocol.md
promises, which mutation testing cannot reach (mutmut mutates function
bodies; `sandbox.defaults` holds only constants).
"""

from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sandbox import defaults
from sandbox.base import Limits, SandboxConfigError
from sandbox.demo import demo_data, demo_input, png_bytes
from sandbox.protocol import prepare_input
from tests.support.paths import REPO_ROOT

RAW32 = REPO_ROOT / "examples" / "selectors" / "raw32" / "selector.py"


def _raw32(input_dir: Path, output_dir: Path) -> list[list[str]]:
    """Run the raw32 example selector on `input_dir` (outside any sandbox); its scores rows."""
    output_dir.mkdir()
    env = {**os.environ, "EXPAUDIT_INPUT": str(input_dir), "EXPAUDIT_OUTPUT": str(output_dir)}
    subprocess.run([sys.executable, str(RAW32)], env=env, check=True)
    with open(output_dir / "scores.csv", newline="") as handle:
        return list(csv.reader(handle))


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=int)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ the documented demo


def test_the_default_demo_is_the_one_the_protocol_shows(tmp_path):
    """docs/selector_protocol.md: setting.json, demo-q000's meta.json and raw32's first scores."""
    setting = demo_input(tmp_path / "in")
    assert setting.experience_ids == ("demo-e000", "demo-e001", "demo-e002")
    assert json.loads((tmp_path / "in" / "setting.json").read_text()) == {
        "protocol_version": 1, "setting_id": "demo", "task": "demo", "k": 3, "q": 6,
        "experience_ids": ["demo-e000", "demo-e001", "demo-e002"],
        "scene_ids": ["demo-q000", "demo-q001", "demo-q002", "demo-q003", "demo-q004", "demo-q005"]}
    meta = json.loads((tmp_path / "in" / "scenes" / "demo-q000" / "meta.json").read_text())
    rounded = {name: [round(v, 4) for v in xyz] for name, xyz in meta.pop("object_positions").items()}
    assert rounded == {"cube_a": [0.2142, -0.0114, 0.2501], "cube_b": [0.1685, 0.2578, -0.2251]}
    assert meta == {"scene_id": "demo-q000", "state_id": "demo-state000", "layout_level": 0,
                    "appearance_draw": 0}
    rows = _raw32(tmp_path / "in", tmp_path / "out")
    assert rows[:3] == [["scene_id", "experience_id", "score"],
                        ["demo-q000", "demo-e000", "-0.7286734614739052"],
                        ["demo-q000", "demo-e001", "-14.985374389645624"]]
    assert len(rows) == 1 + 3 * 6


def test_the_default_sizes_and_seed_are_those_of_the_command(tmp_path):
    """`demo_input` and `demo_data` without arguments: 3 experiences, 6 scenes, seed 0."""
    setting, library, scenes = demo_data()
    assert (len(library), len(scenes)) == (3, 6)
    seeded = demo_data(n_experiences=3, n_scenes=6, seed=0)
    assert [i.base_png for i in library] == [i.base_png for i in seeded[1]]
    assert [s.image_png for s in scenes] == [s.image_png for s in seeded[2]]
    written = demo_input(tmp_path / "default")
    assert written == setting
    demo_input(tmp_path / "seed0", n_experiences=3, n_scenes=6, seed=0)
    assert _tree(tmp_path / "default") == _tree(tmp_path / "seed0")


def test_demo_input_writes_the_tree_of_demo_data_for_the_same_arguments(tmp_path):
    """Sizes and seed reach the data: the same bytes as `prepare_input` of `demo_data`'s."""
    setting = demo_input(tmp_path / "a", n_experiences=2, n_scenes=5, seed=11)
    expected = demo_data(n_experiences=2, n_scenes=5, seed=11)
    assert setting == expected[0]
    prepare_input(tmp_path / "b", *expected)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert len(setting.experience_ids) == 2 and len(setting.scene_ids) == 5


def test_a_seed_gives_the_same_tree_and_another_seed_another(tmp_path):
    demo_input(tmp_path / "a", seed=5)
    demo_input(tmp_path / "b", seed=5)
    demo_input(tmp_path / "c", seed=6)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    differing = {k for k, v in _tree(tmp_path / "a").items() if _tree(tmp_path / "c")[k] != v}
    assert differing > {"library/demo-e000/base.png", "scenes/demo-q005/image.png"}


def test_demo_input_refuses_a_non_empty_directory(tmp_path):
    """The user's own directory: a user error (`InvalidInput`) naming the field, not the
    service's `ProtocolError`."""
    (tmp_path / "left.txt").write_text("x")
    with pytest.raises(SandboxConfigError,
                       match=f"field 'directory': input directory '{tmp_path}' is not empty"):
        demo_input(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["left.txt"]


# ------------------------------------------------------------------ scenes against experiences


@pytest.mark.parametrize("k, q, seed", [(3, 6, 0), (4, 9, 7), (1, 2, 3)])
def test_scene_j_is_a_perturbed_copy_of_experience_j_mod_k(tmp_path, k, q, seed):
    """Noise of at most 8 levels a channel, objects moved by less than a centimetre."""
    setting = demo_input(tmp_path / "in", n_experiences=k, n_scenes=q, seed=seed)
    root = tmp_path / "in"
    assert setting.experience_ids == tuple(f"demo-e{i:03d}" for i in range(k))
    assert setting.scene_ids == tuple(f"demo-q{j:03d}" for j in range(q))
    for j, scene_id in enumerate(setting.scene_ids):
        base_id = f"demo-e{j % k:03d}"
        base = _pixels(root / "library" / base_id / "base.png")
        image = _pixels(root / "scenes" / scene_id / "image.png")
        assert image.shape == (24, 24, 3)
        assert 0 < np.abs(image - base).max() <= 8, scene_id
        base_meta = json.loads((root / "library" / base_id / "meta.json").read_text())
        meta = json.loads((root / "scenes" / scene_id / "meta.json").read_text())
        assert set(meta["object_positions"]) == set(base_meta["object_positions"]) == {"cube_a",
                                                                                       "cube_b"}
        for name, xyz in meta["object_positions"].items():
            moved = np.abs(np.subtract(xyz, base_meta["object_positions"][name]))
            assert len(xyz) == 3 and 0 < moved.max() < 0.01 and moved.min() > 0, (scene_id, name)
    rows = _raw32(root, tmp_path / "out")[1:]
    best = {}
    for scene_id, experience_id, score in rows:
        if scene_id not in best or float(score) > best[scene_id][1]:
            best[scene_id] = (experience_id, float(score))
    assert [best[s][0] for s in setting.scene_ids] == [f"demo-e{j % k:03d}" for j in range(q)]


def test_scene_metadata_pairs_renders_of_one_state(tmp_path):
    """Scenes 2i and 2i+1 share state i, drawn with appearance 0 and 1; layout level j mod 4."""
    demo_input(tmp_path, n_experiences=2, n_scenes=9, seed=1)
    metas = [json.loads((tmp_path / "scenes" / f"demo-q{j:03d}" / "meta.json").read_text())
             for j in range(9)]
    assert [(m["scene_id"], m["state_id"], m["layout_level"], m["appearance_draw"])
            for m in metas] == [(f"demo-q{j:03d}", f"demo-state{j // 2:03d}", j % 4, j % 2)
                                for j in range(9)]
    assert all(sorted(m) == ["appearance_draw", "layout_level", "object_positions", "scene_id",
                             "state_id"] for m in metas)


def test_base_scenes_are_distinct_and_within_reach(tmp_path):
    """Each experience its own random image; object positions within 0.3 m of the origin."""
    setting, library, _ = demo_data(n_experiences=5, seed=2)
    images = [_pixels_of(item.base_png) for item in library]
    assert all(np.abs(a - b).max() > 100 for i, a in enumerate(images) for b in images[i + 1:])
    assert all(image.min() < 16 and image.max() > 239 for image in images)
    for item in library:
        values = [v for xyz in item.object_positions.values() for v in xyz]
        assert len(values) == 6 and all(-0.3 <= v <= 0.3 for v in values)
        assert max(abs(v) for v in values) > 0.05


def _pixels_of(png: bytes) -> np.ndarray:
    import io
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"), dtype=int)


# ------------------------------------------------------------------ the library


def test_library_metadata_and_trajectories(tmp_path):
    """meta.json: id, base positions, task; trajectory.npz: eef_pos (20, 3), gripper (20, 1) in [0, 1]."""
    setting, library, _ = demo_data(n_experiences=2, n_scenes=2, seed=4)
    demo_input(tmp_path, n_experiences=2, n_scenes=2, seed=4)
    for item in library:
        folder = tmp_path / "library" / item.experience_id
        meta = json.loads((folder / "meta.json").read_text())
        assert meta == {"experience_id": item.experience_id, "task": "demo",
                        "object_positions": item.object_positions}
        with np.load(folder / "trajectory.npz", allow_pickle=False) as npz:
            assert sorted(npz.files) == ["eef_pos", "gripper"]
            eef, gripper = npz["eef_pos"], npz["gripper"]
        assert eef.shape == (20, 3) and eef.dtype == np.float64
        assert gripper.shape == (20, 1) and gripper.dtype == np.float64
        assert gripper.min() >= 0.0 and gripper.max() < 1.0 and gripper.std() > 0.1
        assert eef.std() > 0.5 and eef.min() < 0.0 < eef.max()


# ------------------------------------------------------------------ PNG


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, each CRC checked as a strict decoder does."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        at += 12 + length
    return chunks


def test_png_bytes_is_a_strict_png():
    """Signature, IHDR (8-bit RGB, no interlace), every CRC right, unfiltered rows, IEND last."""
    rgb = np.random.default_rng(9).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    chunks = _chunks(png_bytes(rgb))
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBBBBB", chunks[0][1]) == (7, 5, 8, 2, 0, 0, 0)
    raw = zlib.decompress(chunks[1][1])
    rows = [raw[i * 22:(i + 1) * 22] for i in range(5)]
    assert len(raw) == 5 * 22 and all(row[0] == 0 for row in rows)
    assert b"".join(row[1:] for row in rows) == rgb.tobytes()
    assert chunks[2][1] == b""


def test_png_bytes_takes_any_integer_array_and_refuses_other_shapes():
    """Values are stored as uint8; a (H, W, 4) array is refused with its shape."""
    rgb = np.arange(2 * 3 * 3).reshape(2, 3, 3)
    assert _pixels_of(png_bytes(rgb)).tolist() == rgb.tolist()
    with pytest.raises(ValueError, match=r"png_bytes: array shape \(2, 3, 4\) is not \(H, W, 3\)"):
        png_bytes(np.zeros((2, 3, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"array shape \(2, 3, 3, 1\) is not \(H, W, 3\)"):
        png_bytes(np.zeros((2, 3, 3, 1), dtype=np.uint8))


# ------------------------------------------------------------------ the documented limits


def test_the_default_limits_are_the_documented_ones():
    """docs/selector_protocol.md, Limits: 600 s, 4 GiB, 64 pids, 2 CPUs, /output 64 MiB,
    /tmp 256 MiB; scores.csv at most 16 MiB; the last 64 KiB of stdout and stderr kept."""
    assert Limits() == Limits(wall_seconds=600.0, memory_bytes=4 << 30, pids=64, cpus=2.0,
                              output_bytes=64 << 20, tmp_bytes=256 << 20, gpu=False)
    assert (defaults.MIB, defaults.SCORES_BYTES, defaults.LOG_TAIL_BYTES) == \
        (1 << 20, 16 << 20, 64 << 10)
