"""The published images: one PNG per scene or base scene, named and ordered as the tables (real renders)."""

from __future__ import annotations

import io
import shutil
import tarfile

import numpy as np
import pytest

from benchmark_data.image_archive import base_images_path, member_name, read_png
from benchmark_data.paths import library_dir

pytestmark = pytest.mark.sim


def test_base_images_are_one_render_per_experience_in_library_order(tmp_path):
    from PIL import Image

    from benchmark_data.generation.images import write_base_images
    from benchmark_data.library import read_experiences
    from simulator.appearance import SceneRenderer
    from simulator.door_sim import DoorSim

    source = library_dir("door-stream")
    if not (source / "experiences.parquet").exists():
        pytest.skip("frozen data not built")
    shutil.copytree(source, tmp_path / "libraries" / "door-stream")
    sim = DoorSim()
    renderer = SceneRenderer(sim, task="door")
    try:
        path = write_base_images("door-stream", sim, renderer, tmp_path)
    finally:
        renderer.close()
    ids = list(read_experiences("door-stream", tmp_path).experience_id)
    with tarfile.open(path) as tar:
        assert tar.getnames() == [member_name(e) for e in ids]
    first = np.asarray(Image.open(io.BytesIO(read_png(path, ids[0]))))
    published = np.asarray(Image.open(io.BytesIO(read_png(base_images_path("door-stream"), ids[0]))))
    assert first.shape == published.shape == (128, 128, 3)
    # the software renderer may round a few pixels differently on another CPU (docs/data.md)
    assert np.abs(first.astype(int) - published.astype(int)).max() <= 2
