"""Stored audit reports of the reference rules: one JSON file per (setting, rule).

Layout of a report directory:
- `<setting_id>__<rule>.json`: {"setting": {...}, "rule", "status":
  "computed" | "not_computed", "reason", "report": the audit report dict};
- `_missing.json`: settings with no complete matrix, each with the reason;
- `_own_base.json`: {library_id: {experience_id: own-base success}}.

`compute_rule_reports` audits every reference rule of one setting into such a
directory; `load_store` reads it back for the findings (`measure`). A missing
directory is `ReportsNotFound`, a malformed file `BadReportFile` (both also
ValueErrors).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmark_data.registry import SETTINGS, HoldsSetting, Setting
from expaudit.errors import DataNotFound, InvalidInput
from leaderboard.audit import run_audit
from leaderboard.errors import BrokenContract
from leaderboard.rules.baselines import audit_baselines

REPORT_SUFFIX = ".json"
MISSING_FILE = "_missing.json"
OWN_BASE_FILE = "_own_base.json"


class BadReportFile(InvalidInput, ValueError):
    """A file of a report directory that is not valid JSON or lacks a field the findings read."""


class ReportsNotFound(DataNotFound, ValueError):
    """The report directory does not exist (compute it first)."""


# ---------------------------------------------------------------- the store


@dataclass(frozen=True)
class SettingInfo(HoldsSetting):
    """A setting as the findings hold it: the registry's record and its place in publication order.

    Stored as {"setting_id", "task", "mechanism", "k", "query_set", "order"} and, for a
    policy setting, "policy_mechanism" (`to_json`, `from_json`), so report directories
    written before stay readable.
    """

    setting: Setting
    order: int = 0
    """Position in the benchmark's publication order (tables follow it)."""
    policy_mechanism: int | None = None
    """For a policy setting: the version of how its policies were trained when its cells
    were audited (1: one agent-view camera; 2: docs/policy_protocol.md); None if unknown."""

    def to_json(self) -> dict:
        out = {"setting_id": self.setting_id, "task": self.task, "mechanism": self.mechanism,
               "k": self.k, "query_set": self.query_set, "order": self.order}
        if self.policy_mechanism is not None:
            out["policy_mechanism"] = self.policy_mechanism
        return out

    @classmethod
    def from_json(cls, payload: dict) -> SettingInfo:
        """The record of a stored "setting" object (`BadReportFile`, KeyError, TypeError or
        ValueError when malformed)."""
        unknown = set(payload) - set(_STORED_KEYS)
        if unknown:
            raise BadReportFile(f"unexpected keys {sorted(unknown)}")
        setting = Setting(id=payload["setting_id"], task=payload["task"],
                          mechanism=payload["mechanism"], k=int(payload["k"]),
                          query_set=payload["query_set"])
        registered = SETTINGS.get(setting.id)
        if registered is not None and _stored_fields(registered) == _stored_fields(setting):
            setting = registered  # the registry's record (with its library and description)
        mechanism = payload.get("policy_mechanism")
        return cls(setting, int(payload.get("order", 0)), None if mechanism is None else int(mechanism))


def _stored_fields(setting: Setting) -> tuple:
    return setting.id, setting.task, setting.mechanism_id, setting.k, setting.query_set


_STORED_KEYS = ("setting_id", "task", "mechanism", "k", "query_set", "order", "policy_mechanism")


@dataclass(frozen=True)
class StoredReport:
    """One (setting, rule): the audit report dict, or None with the reason it was not computed."""

    setting: SettingInfo
    rule: str
    report: dict | None
    reason: str | None

    @property
    def computed(self) -> bool:
        return self.report is not None


@dataclass(frozen=True)
class ReportStore:
    """Everything read from a report directory."""

    reports: tuple[StoredReport, ...]
    missing: tuple[tuple[SettingInfo, str], ...]
    own_base: dict

    def settings(self) -> list[SettingInfo]:
        seen: dict[str, SettingInfo] = {}
        for stored in self.reports:
            seen.setdefault(stored.setting.setting_id, stored.setting)
        return sorted(seen.values(), key=lambda s: (s.order, s.setting_id))

    def get(self, setting_id: str, rule: str) -> StoredReport | None:
        for stored in self.reports:
            if stored.setting.setting_id == setting_id and stored.rule == rule:
                return stored
        return None


def _write_json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "w") as stream:
        json.dump(payload, stream, sort_keys=True, indent=1)
    os.replace(temp, path)


def write_rule_report(directory: str | Path, setting: SettingInfo, rule: str,
                      report: dict | None, reason: str | None = None) -> Path:
    """Store one rule's report (or why it was not computed) as `<setting>__<rule>.json`."""
    if (report is None) == (reason is None):
        raise BrokenContract(f"{setting.setting_id}/{rule}: give exactly one of report and reason")
    path = Path(directory) / f"{setting.setting_id}__{rule}{REPORT_SUFFIX}"
    _write_json(path, {"setting": setting.to_json(), "rule": rule,
                       "status": "computed" if report is not None else "not_computed",
                       "reason": reason, "report": report})
    return path


def write_missing(directory: str | Path, missing: list[tuple[SettingInfo, str]]) -> None:
    """Store the settings that have no complete matrix, each with the reason."""
    _write_json(Path(directory) / MISSING_FILE,
                [{"setting": s.to_json(), "reason": reason} for s, reason in missing])


def write_own_base(directory: str | Path, own_base: dict) -> None:
    """Store own-base success: {library_id: {experience_id: success}}."""
    _write_json(Path(directory) / OWN_BASE_FILE, own_base)


@dataclass(frozen=True)
class KeptReports:
    """What a report directory keeps when only some settings are computed again: the other
    settings' entries of `_missing.json` and the own-base figures of the libraries whose
    settings keep their reports."""

    missing: tuple[tuple[SettingInfo, str], ...]
    own_base: dict


def kept_reports(directory: str | Path, setting_ids=None) -> KeptReports:
    """Read (and check) what `directory` keeps when `setting_ids` are computed again (every
    setting when None: nothing is kept); changes nothing, so a bad file stops the run
    before any report is lost."""
    directory = Path(directory)
    if setting_ids is None or not directory.is_dir():
        return KeptReports((), {})
    setting_ids = set(setting_ids)
    missing_path, own_path = directory / MISSING_FILE, directory / OWN_BASE_FILE
    missing = [] if not missing_path.exists() else [
        (_setting(item, missing_path), _reason(item, missing_path)) for item in _read(missing_path)]
    measured = {path.name.split("__", 1)[0] for path in directory.glob(f"*__*{REPORT_SUFFIX}")}
    libraries = {SETTINGS[s].library_id for s in measured - setting_ids if s in SETTINGS}
    own_base = _read(own_path) if own_path.exists() else {}
    return KeptReports(tuple((info, reason) for info, reason in missing
                             if info.setting_id not in setting_ids),
                       {lib: value for lib, value in own_base.items() if lib in libraries})


def replace_reports(directory: str | Path, computed: str | Path, setting_ids,
                    missing: list[tuple[SettingInfo, str]], own_base: dict) -> None:
    """Put the reports computed into `computed` in place of those of `setting_ids` (every
    setting's when None) in `directory`, then write `missing` and `own_base` whole. Called
    once the computation has finished, so a failure during it leaves `directory` as it was."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stale = (directory.glob(f"*__*{REPORT_SUFFIX}") if setting_ids is None else
             [p for s in setting_ids for p in directory.glob(f"{s}__*{REPORT_SUFFIX}")])
    for path in list(stale):
        path.unlink()
    for path in sorted(Path(computed).glob(f"*__*{REPORT_SUFFIX}")):
        os.replace(path, directory / path.name)
    write_missing(directory, missing)
    write_own_base(directory, own_base)


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadReportFile(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from exc


def _reason(item: dict, path: Path) -> str:
    reason = item.get("reason") if isinstance(item, dict) else None
    if not isinstance(reason, str):
        raise BadReportFile(f"{path}: an entry's field 'reason' is missing or not text")
    return reason


def _setting(payload: dict, path: Path) -> SettingInfo:
    try:
        return SettingInfo.from_json(payload["setting"])
    except (KeyError, TypeError, ValueError) as exc:
        raise BadReportFile(f"{path}: field 'setting' is missing or malformed: {exc}") from exc


def load_store(directory: str | Path) -> ReportStore:
    """Read every report file of a directory (`BadReportFile` names a bad file)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportsNotFound(f"report directory {directory} does not exist")
    reports = []
    for path in sorted(directory.glob(f"*__*{REPORT_SUFFIX}")):
        payload = _read(path)
        status = payload.get("status")
        if status not in ("computed", "not_computed"):
            raise BadReportFile(f"{path}: field 'status' must be 'computed' or 'not_computed', "
                                f"got {status!r}")
        reports.append(StoredReport(_setting(payload, path), payload.get("rule", ""),
                                    payload.get("report"), payload.get("reason")))
    missing_path = directory / MISSING_FILE
    missing = tuple((_setting(item, missing_path), _reason(item, missing_path))
                    for item in (_read(missing_path) if missing_path.exists() else []))
    measured = {stored.setting.setting_id for stored in reports}
    stale = [s.setting_id for s, _ in missing if s.setting_id in measured]
    if stale:
        raise BadReportFile(f"{missing_path}: settings {stale} are listed as not measured but have "
                            "reports; recompute the directory")
    own_path = directory / OWN_BASE_FILE
    own_base = _read(own_path) if own_path.exists() else {}
    return ReportStore(tuple(reports), missing, own_base)


# ---------------------------------------------------------------- computing the reports


def compute_rule_reports(directory: str | Path, setting: SettingInfo, data, extra: dict,
                         *, n_shuffles: int, n_bootstrap: int, seed: int) -> list[Path]:
    """Audit every reference rule of one complete setting and store the reports.

    The outcome-based rules (random, oracle, best_fixed, recency,
    track_record) go through the reference rules' `audit_baselines`, the
    path of the published baseline rows; every rule in `extra` maps to a
    (K, Q) score matrix, audited with `run_audit`, or to a string: the
    reason it is not computed.
    """
    written = []
    kwargs = {"n_shuffles": n_shuffles, "n_bootstrap": n_bootstrap, "seed": seed}
    for rule, report in audit_baselines(data, **kwargs).items():
        written.append(write_rule_report(directory, setting, rule, report))
    for rule, value in extra.items():
        if isinstance(value, str):
            written.append(write_rule_report(directory, setting, rule, None, value))
            continue
        report = run_audit(data, value, selection_only=False, **kwargs).to_dict()
        written.append(write_rule_report(directory, setting, rule, report))
    return written
