"""The frozen benchmark data: which settings exist, where their files are, and how to read them.

The root modules are the readers (`registry`, `paths`, `cells` with its
`journal`, `library`, `query_sets`, `policy_files`, `frozen`); making the
data is `generation` (it needs the simulator), the generated settings pages
are `pages`. The names below load on first use.
"""

from __future__ import annotations

import importlib

from expaudit.numerics import pin_kernels

pin_kernels()  # before any module of this package loads numpy or torch

_SURFACE = {
    "SETTINGS": "benchmark_data.registry", "Setting": "benchmark_data.registry",
    "Mechanism": "benchmark_data.registry", "get_setting": "benchmark_data.registry",
    "UnknownSettingError": "benchmark_data.registry",
    "load_transfer": "benchmark_data.frozen", "load_cells": "benchmark_data.cells",
    "read_scenes": "benchmark_data.query_sets", "read_experiences": "benchmark_data.library",
    "policy_dir": "benchmark_data.policy_files", "root_or_default": "benchmark_data.paths",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'benchmark_data' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
