"""Where the frozen benchmark files live (one place, so loaders and builders agree).

Two places hold cells: the frozen root (`FROZEN_ROOT` or `EXPAUDIT_FROZEN_ROOT`), the
published data, which the generation pipeline writes and the service only reads; and a
computed-cells directory, where the service's runners append the cells they compute at run
time (the sealed setting's, filled on demand). The second lives under the service's data
directory, never inside the installed package or a source tree (`computed_journal`).
"""

from __future__ import annotations

from pathlib import Path

from benchmark_data.registry import SEALED_QUERY_SETS, Mechanism

FROZEN_ROOT = Path(__file__).resolve().parent / "frozen"
"""Default root of the frozen data, shipped inside the package directory."""
STAGING_ROOT = Path(__file__).resolve().parent / "staging"
"""Root where regenerated policies and their cells are made before they replace the published
ones (benchmark_data/staging/README.md); read by nothing the service serves."""
REVISION_ROOT = Path(__file__).resolve().parent / "revision"
"""Root of the next version of published query sets (their corrected states) and the cells of
the states that changed, made beside the published data until it is republished
(benchmark_data/revision/README.md); read by nothing the service serves."""


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


def computed_journal(mechanism: str, query_set: str, cells_dir: str | Path) -> Path:
    """Cells of one (mechanism, query set) computed by the service's runners: one JSON line per
    cell, in the computed-cells directory `cells_dir` (the service's `EXPAUDIT_CELLS_DIR`),
    read together with the published cells of the frozen root."""
    return Path(cells_dir) / f"{mechanism}__{query_set}.journal.jsonl"


def sealed_cells_files(root: str | Path | None = None) -> list[Path]:
    """Where cells of a sealed query set would lie in the frozen root `root` (tables and
    journals, present or not). None is ever published: one that exists was left by a
    generation run or by a service older than the computed-cells directory, and no selector
    may be given a view of it (`service.process.config.protected_paths`)."""
    return [path for query_set in sorted(SEALED_QUERY_SETS) for mechanism in Mechanism
            for path in (cells_table(mechanism.value, query_set, root),
                         cells_journal(mechanism.value, query_set, root))]


BASE_QUERY_SET = {"stack": "stack-base", "door": "door-base"}
"""Pseudo query set of the experiences' own base scenes (own-base success)."""
