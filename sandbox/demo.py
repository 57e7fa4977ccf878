"""A small synthetic /input tree for trying a selector before submitting it.

Scene j is a perturbed copy of experience j mod K: its image is the
experience's base image with a little noise and its objects sit within a
centimetre of the base scene's. A sensible selector therefore picks
experience j mod K in scene j, which makes the demo a quick check that a
selector reads the protocol correctly. No outcomes exist for it: it is for
running selectors, not for auditing them.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from expaudit.errors import InternalError
from sandbox.base import SandboxConfigError, SandboxError
from sandbox.protocol import LibraryItem, QueryScene, SettingInfo, prepare_input

DEMO_SETTING = "demo"
IMAGE_SIZE = 24
"""Side of the demo images in pixels (tiny on purpose)."""
OBJECTS = ("cube_a", "cube_b")


class NotAnRgbImage(SandboxError, InternalError, ValueError):
    """An array handed to the PNG encoder that is not (H, W, 3) (the demo makes them: a bug)."""


def png_bytes(rgb: np.ndarray) -> bytes:
    """Encode an (H, W, 3) uint8 array as a PNG (8-bit RGB, no filter), with zlib only."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise NotAnRgbImage(f"png_bytes: array shape {rgb.shape} is not (H, W, 3)")
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def demo_data(*, n_experiences: int = 3, n_scenes: int = 6,
              seed: int = 0) -> tuple[SettingInfo, list[LibraryItem], list[QueryScene]]:
    """The demo's setting, library and scenes as protocol dataclasses."""
    rng = np.random.default_rng(seed)
    library, bases = [], []
    for i in range(n_experiences):
        image = rng.integers(0, 256, size=(IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
        positions = {name: [float(v) for v in rng.uniform(-0.3, 0.3, 3)] for name in OBJECTS}
        trajectory = {"eef_pos": rng.normal(size=(20, 3)), "gripper": rng.uniform(size=(20, 1))}
        bases.append((image, positions))
        library.append(LibraryItem(f"demo-e{i:03d}", png_bytes(image), positions, trajectory,
                                   {"task": "demo"}))
    scenes = []
    for j in range(n_scenes):
        image, positions = bases[j % n_experiences]
        noisy = np.clip(image.astype(int) + rng.integers(-8, 9, size=image.shape), 0, 255)
        moved = {name: [v + float(rng.uniform(-0.01, 0.01)) for v in xyz]
                 for name, xyz in positions.items()}
        scenes.append(QueryScene(f"demo-q{j:03d}", png_bytes(noisy.astype(np.uint8)),
                                 state_id=f"demo-state{j // 2:03d}", layout_level=j % 4,
                                 appearance_draw=j % 2, object_positions=moved))
    setting = SettingInfo(DEMO_SETTING, "demo", tuple(e.experience_id for e in library),
                          tuple(s.scene_id for s in scenes))
    return setting, library, scenes


def demo_input(directory: Path, *, n_experiences: int = 3, n_scenes: int = 6,
               seed: int = 0) -> SettingInfo:
    """Write the demo /input tree into `directory` and return its setting.

    Raises
    ------
    SandboxConfigError : `directory` already holds files; the demo writes a new tree and
        never mixes it with the user's own (a user error, unlike `prepare_input`'s own
        refusal, which guards the service's freshly made /input).
    """
    directory = Path(directory)
    if directory.is_dir() and any(directory.iterdir()):
        raise SandboxConfigError(f"field 'directory': input directory '{directory}' is not "
                                 "empty; give a new or empty directory")
    setting, library, scenes = demo_data(n_experiences=n_experiences, n_scenes=n_scenes,
                                         seed=seed)
    prepare_input(directory, setting, library, scenes)
    return setting
