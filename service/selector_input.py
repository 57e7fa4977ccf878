"""The /input tree of a frozen setting for a container submission.

`runner.sandbox.frozen_input.prepare_frozen_input` takes the ids, order and
layouts from the frozen tables; this module gives it the images, read from
the frozen image archives (`query_sets/<id>/images.tar`,
`libraries/<id>/base_images.tar`). Each archive is read once per run, not
once per image. Outcomes are never read.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from runner.sandbox.protocol import SettingInfo


class ImageArchive:
    """PNG members of one image archive, by id (`<id>.png`), read in one pass."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"image archive {self.path} does not exist "
                                    "(render it with `expaudit data images`)")
        self._images: dict[str, bytes] = {}
        with tarfile.open(self.path) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith(".png"):
                    self._images[Path(member.name).stem] = tar.extractfile(member).read()

    def __call__(self, item_id: str) -> bytes:
        try:
            return self._images[item_id]
        except KeyError:
            raise KeyError(f"{self.path.name} has no image '{item_id}.png'") from None


def prepare_setting_input(directory: Path, setting_id: str, root=None) -> SettingInfo:
    """Write the /input tree of frozen setting `setting_id` (data under `root`) into `directory`."""
    from benchmark_data.paths import library_dir, query_set_dir
    from benchmark_data.registry import get_setting
    from runner.sandbox.frozen_input import prepare_frozen_input

    setting = get_setting(setting_id)
    scenes = ImageArchive(query_set_dir(setting.query_set, root) / "images.tar")
    bases = ImageArchive(library_dir(setting.library_id, root) / "base_images.tar")
    return prepare_frozen_input(Path(directory), setting_id, scene_png=scenes, base_png=bases,
                                root=root)
