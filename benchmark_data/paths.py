"""Where the frozen benchmark files live (one place, so loaders and builders agree)."""

from __future__ import annotations

from pathlib import Path

FROZEN_ROOT = Path(__file__).resolve().parent / "frozen"
"""Default root of the frozen data, shipped inside the package directory."""
STAGING_ROOT = Path(__file__).resolve().parent / "staging"
"""Root where regenerated policies and their cells are made before they replace the published
ones (benchmark_data/staging/README.md); read by nothing the service serves."""


def root_or_default(root: str | Path | None) -> Path:
    return FROZEN_ROOT if root is None else Path(root)


def library_dir(library_id: str, root: str | Path | None = None) -> Path:
    return root_or_default(root) / "libraries" / library_id


def query_set_dir(query_set: str, root: str | Path | None = None) -> Path:
    return root_or_default(root) / "query_sets" / query_set


def cells_table(mechanism: str, query_set: str, root: str | Path | None = None) -> Path:
    """Consolidated cells of one (mechanism, query set): a Parquet file."""
    return root_or_default(root) / "cells" / f"{mechanism}__{query_set}.parquet"


def cells_journal(mechanism: str, query_set: str, root: str | Path | None = None) -> Path:
    """Cells finished since the last consolidation: one JSON line per cell."""
    return root_or_default(root) / "cells" / f"{mechanism}__{query_set}.journal.jsonl"


BASE_QUERY_SET = {"stack": "stack-base", "door": "door-base"}
"""Pseudo query set of the experiences' own base scenes (own-base success)."""
