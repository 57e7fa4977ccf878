"""A package's face: the names the rest of the project imports from it, each loaded on first use.

A package `__init__` declares which of its modules holds each public name, and importing the
package loads none of them: a light module of the package (its constants, its errors) does
not pull in pandas, Redis or the simulator with it.

    __all__, __getattr__ = lazy_face(__name__, {".tokens": ("TokenRegistry", ...)})
"""

from __future__ import annotations

import importlib
from typing import Callable, Mapping, Sequence

__all__ = ["lazy_face"]


def lazy_face(package: str, surface: Mapping[str, Sequence[str]]) -> tuple[list[str], Callable[[str], object]]:
    """`__all__` and the module `__getattr__` (PEP 562) of `package`, from {module: its public
    names}; a module name starting with "." is relative to `package`."""
    where = {name: module for module, names in surface.items() for name in names}

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name], package), name)

    return sorted(where), __getattr__
