"""Sealed settings: the daily quota, the Ladder and the headline-only reports (retrieval), and
the confirm-summary reports of readout submissions.

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".report": ("audit_sealed",),
    ".readout_report": ("served_readout_report",),
    ".quota": ("give_back_claim_key", "give_back_sealed_quota", "sealed_settings",
               "take_sealed_quota"),
})
