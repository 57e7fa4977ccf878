"""`expaudit serve`: the whole service in one command (Redis, the web and worker processes).

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".embedded": ("serve",),
})
