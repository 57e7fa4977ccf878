"""The settings the service serves: their frozen data, downloads and a selector's /input, and
the readout settings (`readout`: one per task and bank version).

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".catalog": ("BenchmarkCatalog", "Catalog", "DataUnavailable", "SelectorsUnsupported", "StaticCatalog",
                 "UnknownSetting", "export_setting", "fingerprint", "open_catalog"),
    ".readout": ("ReadoutCatalog", "ReadoutSetting", "open_readout_catalog"),
    ".readout_input": ("prepare_readout_setting_input",),
    ".downloads": ("offered_downloads",),
})
