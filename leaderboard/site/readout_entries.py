"""The rows and settings of the readout leaderboard, checked on construction.

`ReadoutEntry` is one published representation on one readout setting: a public
submission (its served report, `expaudit-readout-submission/1`) or a reference
representation (its block of the bank's `reports/reference-confirm.json`).
`ReadoutSettingInfo` is what the pages say of a setting besides its rows. Both refuse
ids that could not become file names. The publisher makes them; `readout_pages` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from leaderboard.errors import BrokenContract

KINDS = ("reference", "submission")
"""A row is a reference representation measured by the benchmark itself, or a submission."""

PRIMARY = ("mae_natural", "mae_controlled", "gain", "gain_error", "context_sensitivity")
"""The spec's primary numbers, in the order the pages show them (docs/readout.md)."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,159}")
"""Ids become file names of the published site: letters, digits, '.' and '-' only."""

REPORT_KEYS = ("bank", "inputs", "notes", "representations", "primary_tests")
"""What a row's report must hold (both report kinds have them)."""


def _check_id(field_name: str, value: object) -> None:
    if not isinstance(value, str) or not _ID_PATTERN.fullmatch(value):
        raise BrokenContract(f"field '{field_name}' must be 1-160 characters of letters, digits, '.' "
                             f"or '-' starting with a letter or digit, got {value!r}")


def slug(name: str) -> str:
    """A representation name as a file-name part: every other character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", name).strip("-.") or "representation"


@dataclass(frozen=True)
class ReadoutEntry:
    """One published representation on one readout setting.

    Attributes:
        row_id: unique across the site; names the report files (``reports/<row_id>.html``).
        setting_id: the readout setting (``<task>-readout-<version>``).
        display_name: what the row is called on the pages.
        kind: "reference" or "submission".
        report: a readout report holding this one representation (`REPORT_KEYS`).
        submitted_at: ISO 8601 time of submission; empty for a reference row.
        submitter: who submitted it (the token's name); empty for a reference row.
    """

    row_id: str
    setting_id: str
    display_name: str
    kind: str
    report: dict
    submitted_at: str = ""
    submitter: str = ""

    def __post_init__(self) -> None:
        _check_id("row_id", self.row_id)
        _check_id("setting_id", self.setting_id)
        if self.kind not in KINDS:
            raise BrokenContract(f"readout row {self.row_id!r}: field 'kind' must be one of {KINDS}, "
                                 f"got {self.kind!r}")
        missing = [key for key in REPORT_KEYS if key not in self.report]
        if missing:
            raise BrokenContract(f"readout row {self.row_id!r}: field 'report' lacks {missing[0]!r}")
        if len(self.report["representations"]) != 1:
            raise BrokenContract(f"readout row {self.row_id!r}: field 'report.representations' must "
                                 f"hold one representation, got {len(self.report['representations'])}")

    @property
    def representation(self) -> dict:
        return self.report["representations"][0]

    @property
    def summary(self) -> dict:
        return self.representation.get("summary") or {}


@dataclass(frozen=True)
class ReadoutDownloadLink:
    """One public file of the bank as the pages list it: its key, served name and content."""

    key: str
    file_name: str
    holds: str
    path: str
    """Its route under the API prefix (``settings/<id>/files/<name>``)."""


@dataclass(frozen=True)
class ReadoutSettingInfo:
    """What the readout pages say of a setting besides its rows.

    Attributes:
        setting_id, task, version, coordinate, unit: the bank's identity.
        initializations, observations: counts per split (`bank.json`).
        accepts_submissions: whether this server holds the sealed labels; with
            `unavailable_reason` when not.
        downloads: the bank's public files.
        reference: the bank's `reports/reference-confirm.json` (its summaries only), or
            None where it is not there; its representations become reference rows.
    """

    setting_id: str
    task: str
    version: str
    coordinate: str
    unit: str
    initializations: dict = field(default_factory=dict)
    observations: dict = field(default_factory=dict)
    accepts_submissions: bool = False
    unavailable_reason: str | None = None
    downloads: tuple[ReadoutDownloadLink, ...] = ()
    reference: dict | None = None

    def __post_init__(self) -> None:
        _check_id("setting_id", self.setting_id)
        if self.reference is not None:
            for rep in self.reference.get("representations") or []:
                if rep.get("initializations") or rep.get("curves"):
                    raise BrokenContract(f"readout setting {self.setting_id!r}: the reference report's "
                                         f"representation {rep.get('name')!r} holds per-initialization "
                                         "values; only summaries are published")

    @property
    def page(self) -> str:
        return f"settings/{self.setting_id}.html"


def _tests_of(tests: dict, task: str, name: str) -> dict:
    prefix = f"{task}/{name}/"
    kept = [t for t in tests.get("tests") or [] if t["test_id"].startswith(prefix)
            and "/" not in t["test_id"][len(prefix):]]
    return {**{k: v for k, v in tests.items() if k != "tests"}, "tests": kept}


def reference_entries(info: ReadoutSettingInfo) -> list[ReadoutEntry]:
    """The reference report's representations as rows, each with its own report: its summary,
    readout and failure predictors, its tests (Holm over the published family) and the paired
    differences it takes part in. The report's file paths (`source`) are not published."""
    report = info.reference
    if not report:
        return []
    task = (report.get("bank") or {}).get("task", info.task)
    out = []
    for rep in report.get("representations") or []:
        name = rep["name"]
        kept = {k: v for k, v in rep.items() if k != "source"}
        pairs = [p for p in report.get("paired_differences") or [] if name in (p["first"], p["second"])]
        row = {"schema_version": report.get("schema_version"), "setting": info.setting_id,
               "bank": report.get("bank") or {}, "inputs": report.get("inputs") or {},
               "notes": list(report.get("notes") or []), "representations": [kept],
               "paired_differences": pairs,
               "primary_tests": _tests_of(report.get("primary_tests") or {}, task, name)}
        out.append(ReadoutEntry(row_id=f"reference.{info.setting_id}.{slug(name)}",
                                setting_id=info.setting_id, display_name=name, kind="reference",
                                report=row))
    return out
