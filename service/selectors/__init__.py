"""Container submissions: the archive or image checked at upload, and the selector run of
an audit job in the sandbox.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".run": ("SelectorFailed", "make_sandbox", "run_container", "selector_limits"),
    ".readout_run": ("run_readout_container",),
})
