"""Rows for the readout leaderboard's tests: the committed banks' settings and reference
reports, and submissions whose served reports the real engine computed on the small synthetic
bank (`tests.support.readout_bank`), published on door-readout-v1."""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

import pandas as pd

from leaderboard.readout import read_bank, read_features, run_readout_audit
from leaderboard.site.readout_entries import ReadoutEntry
from service.catalog.readout import ReadoutCatalog
from service.sealed.readout_report import served_readout_report
from service.submissions.publishing import readout_setting_infos
from tests.support.readout_bank import write_bank

SETTING = "door-readout-v1"
SUBMISSIONS = {"sub-weak": "weak features <i>", "sub-constant": "constant readout"}
"""Row id (before the setting) -> display name of the synthetic submissions."""


def readout_infos() -> list:
    """The readout settings of the committed banks, with their reference reports."""
    return readout_setting_infos(ReadoutCatalog())


@lru_cache(maxsize=1)
def _served_reports() -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as directory:
        made = write_bank(Path(directory))
        bank = read_bank(made["bank"], made["sealed"])
        weak = read_features(made["weak"], SUBMISSIONS["sub-weak"])
        frame = pd.read_parquet(made["weak"])
        constant = frame.assign(**{c: 1.0 for c in frame.columns if c != "observation_id"})
        constant_path = Path(directory) / "constant.parquet"
        constant.to_parquet(constant_path, index=False)
        flat = read_features(constant_path, SUBMISSIONS["sub-constant"])
        return {sid: served_readout_report(run_readout_audit(bank, [rep], split="confirm"), SETTING)
                for sid, rep in (("sub-weak", weak), ("sub-constant", flat))}


def readout_submissions() -> list[ReadoutEntry]:
    """Two public submissions on door-readout-v1: weak features and a constant readout."""
    reports = _served_reports()
    return [ReadoutEntry(row_id=f"{sid}.{SETTING}", setting_id=SETTING, display_name=name, kind="submission",
                         report=reports[sid], submitted_at=f"2026-01-0{i + 1}T00:00:00Z", submitter="lab <b>")
            for i, (sid, name) in enumerate(SUBMISSIONS.items())]

