"""The frozen benchmark data: which settings exist, where their files are, and how to read them.

The root modules are the readers (`registry`, `paths`, `cells`, `library`,
`query_sets`, `policy_files`, `frozen`, `readout_banks`, `downloads`); making
the data is `generation` (it needs the simulator), the generated settings
pages are `pages`. The names below load on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face
from expaudit.numerics import pin_kernels

pin_kernels()  # before any module of this package loads numpy or torch

__all__, __getattr__ = lazy_face(__name__, {
    ".registry": ("SETTINGS", "Setting", "Mechanism", "get_setting", "UnknownSettingError"),
    ".frozen": ("load_transfer",),
    ".cells": ("load_cells",),
    ".query_sets": ("read_scenes",),
    ".library": ("read_experiences",),
    ".policy_files": ("policy_dir",),
    ".paths": ("root_or_default",),
})
