"""The rows and settings the published leaderboard is built from, checked on construction.

`LeaderboardEntry` is one published row and `SettingInfo` what the pages say of
a setting besides its rows; both refuse ids that could not become file names or
object-store keys. The publisher makes them; `build` and `views` read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmark_data.downloads import DOWNLOADS, Download, offered
from benchmark_data.registry import HoldsSetting, Setting
from leaderboard.errors import BrokenContract
from leaderboard.metrics.discrimination import quality_shortfall

KINDS = ("baseline", "submission")
"""A row is a reference rule computed by the benchmark itself, or a user's submission."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,127}")
"""Ids become file names in the published site and object-store keys, so only
URL-, path- and key-safe ids pass (letters, digits, '.' and '-')."""

@dataclass(frozen=True)
class LeaderboardEntry:
    """One published row: a submission (or a reference rule) on one setting.

    Attributes
    ----------
    submission_id : unique across the whole site; names the report files.
    setting_id : the setting the report was computed on.
    display_name : what the row is called on the page.
    kind : "baseline" (a reference rule run by the benchmark) or "submission".
    submitted_at : ISO 8601 time of submission (shown, and used to break ties).
    report : the audit report as produced by `AuditReport.to_dict()`; an
        empty dict when `not_computed` is set.
    not_computed : why the rule has no report here (weights missing, torch
        not installed, ...); such a row is not published (the reason is for
        the operator, not the public). None for a computed row.
    """

    submission_id: str
    setting_id: str
    display_name: str
    kind: str
    submitted_at: str
    report: dict
    not_computed: str | None = None
    submitter: str = ""
    """Who submitted it (the token's name); empty for reference rules."""
    submitter_id: str = ""
    """Whose row it is (the owner the operator named for the token): the rows of one
    submitter, for the best row per submitter; never shown. Empty: `submitter`."""

    def __post_init__(self) -> None:
        _check_id("submission_id", self.submission_id)
        _check_id("setting_id", self.setting_id)
        if self.kind not in KINDS:
            raise BrokenContract(
                f"entry {self.submission_id!r}: field 'kind' must be one of {KINDS}, "
                f"got {self.kind!r}"
            )
        if not isinstance(self.report, dict):
            raise BrokenContract(
                f"entry {self.submission_id!r}: field 'report' must be a dict, "
                f"got {type(self.report).__name__}"
            )
        if self.not_computed is not None:
            if not isinstance(self.not_computed, str) or not self.not_computed.strip():
                raise BrokenContract(f"entry {self.submission_id!r}: field 'not_computed' must be "
                                  f"a non-empty reason, got {self.not_computed!r}")
            if self.report:
                raise BrokenContract(f"entry {self.submission_id!r}: field 'report' must be empty "
                                  "when 'not_computed' is set (a row has numbers or a reason, "
                                  "not both)")


@dataclass(frozen=True)
class SettingInfo(HoldsSetting):
    """What the leaderboard says about a setting besides its rows: the registry's record and
    how much of its outcome tensor is executed.

    Attributes
    ----------
    setting : the setting (its id, task, mechanism, K, query set, sealed and description
        are read from it; `setting_id`, `task`, ... name them for the pages).
    cells_done, cells_total : executed cells of the outcome tensor and its size.
    policy_gates_failed : one line per gate of `docs/policy_protocol.md` the setting's
        policies failed before it was generated, with the measured value and n (the
        publisher reads them; empty where none failed or none were measured).
    quality_range : the best experience's mean success minus the worst's over the complete
        matrix (`leaderboard.metrics.discrimination.quality_range`); None where the matrix
        is not complete or not published.
    downloads : keys of `benchmark_data.downloads.DOWNLOADS` the service offers for the
        setting (the publisher asks its catalog); None lists those every benchmark
        setting has (no outcomes of a sealed one, none of the /input tree's files).
    """

    setting: Setting
    cells_done: int
    cells_total: int
    policy_gates_failed: tuple[str, ...] = ()
    quality_range: float | None = None
    downloads: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _check_id("setting_id", self.setting.id)
        if not 0 <= self.cells_done <= self.cells_total:
            raise BrokenContract(
                f"setting {self.setting_id!r}: field 'cells_done' must be between 0 and "
                f"cells_total={self.cells_total}, got {self.cells_done}"
            )
        gates = self.policy_gates_failed
        if not isinstance(gates, tuple) or not all(isinstance(g, str) for g in gates):
            raise BrokenContract(f"setting {self.setting_id!r}: field 'policy_gates_failed' must be "
                              f"a tuple of str, got {gates!r}")
        unknown = sorted(set(self.downloads or ()) - set(DOWNLOADS))
        if unknown:
            raise BrokenContract(f"setting {self.setting_id!r}: field 'downloads' names "
                                 f"{unknown[0]!r}, not one of {sorted(DOWNLOADS)}")
        quality = self.quality_range
        if quality is not None and not (isinstance(quality, float) and 0.0 <= quality <= 1.0):
            raise BrokenContract(f"setting {self.setting_id!r}: field 'quality_range' must be None "
                                 f"or a float in 0-1, got {quality!r}")

    @property
    def sealed(self) -> bool:
        return self.setting.sealed

    @property
    def quality_shortfall(self) -> str | None:
        """What a quality range below the bar says, measured; None when it meets it or is unknown."""
        return None if self.quality_range is None else quality_shortfall(self.quality_range)

    @property
    def description(self) -> str:
        return self.setting.description

    @property
    def offered_downloads(self) -> list[Download]:
        """The setting's downloads, in `DOWNLOADS` order."""
        if self.downloads is None:
            return offered(self.setting, input_tree=False)
        return [d for d in DOWNLOADS.values() if d.key in self.downloads]

    def to_json(self) -> dict:
        """The "setting" object of the published JSON."""
        return {"setting_id": self.setting_id, "task": self.task, "mechanism": self.mechanism,
                "k": self.k, "query_set": self.query_set, "sealed": self.sealed,
                "cells_done": self.cells_done, "cells_total": self.cells_total,
                "description": self.description,
                "policy_gates_failed": list(self.policy_gates_failed),
                "quality_range": self.quality_range,
                "quality_shortfall": self.quality_shortfall}


def _check_id(field: str, value: object) -> None:
    if not isinstance(value, str) or not _ID_PATTERN.fullmatch(value):
        raise BrokenContract(
            f"field '{field}' must be 1-128 characters of letters, digits, '.' or '-' "
            f"starting with a letter or digit, got {value!r}"
        )
