"""The one reader of the frozen image archives: member names, one PNG, every PNG, by id."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from benchmark_data.image_archive import (BASE_TAR, QUERY_TAR, ImageArchive, base_images_path, first_png,
                                          item_id, iter_pngs, member_name, query_images_path, read_png,
                                          read_pngs)


def _write(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_paths_and_member_names(tmp_path):
    assert query_images_path("stack-orig", tmp_path) == tmp_path / "query_sets" / "stack-orig" / QUERY_TAR
    assert base_images_path("stack-stream", tmp_path) == tmp_path / "libraries" / "stack-stream" / BASE_TAR
    assert member_name("stack-e007") == "stack-e007.png"
    assert item_id("stack-e007.png") == "stack-e007"
    assert item_id("notes.txt") is None


def test_reads_by_id_in_the_order_asked(tmp_path):
    archive = _write(tmp_path / "qs" / QUERY_TAR, {"b.png": b"B", "a.png": b"A", "readme.txt": b"x"})
    assert read_png(archive, "a") == b"A"
    assert read_pngs(archive, ["a", "b"]) == [b"A", b"B"]
    assert list(iter_pngs(archive)) == [("b", b"B"), ("a", b"A")]
    assert first_png(archive) == b"B"
    with pytest.raises(KeyError, match=r"qs/images.tar has no image 'c.png'"):
        read_png(archive, "c")


def test_an_archive_without_pngs_has_no_first(tmp_path):
    assert first_png(_write(tmp_path / QUERY_TAR, {"readme.txt": b"x"})) is None


def test_image_archive_holds_every_png(tmp_path):
    archive = ImageArchive(_write(tmp_path / BASE_TAR, {"e0.png": b"0", "e1.png": b"1"}))
    assert archive("e1") == b"1"
    with pytest.raises(KeyError, match="has no image 'e2.png'"):
        archive("e2")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ImageArchive(tmp_path / "missing.tar")
