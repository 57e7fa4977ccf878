"""Render the public leaderboard as static files: HTML and JSON, no server code.

The leaderboard is published, not computed per request: the publish job calls
`build_leaderboard` with every published report and writes the returned files
into the object store, from where a static server (or the object store
itself) serves them. Reading the leaderboard therefore costs no Python and no
Redis, and every page is self-contained (inline CSS, inline SVG, one small
inline script for sorting; nothing is fetched from an API or a CDN).

Layout of the returned mapping (keys are paths relative to the site root)::

    index.html, index.json                   every setting, its completeness and leader
    settings/<setting_id>.html, .json        one row per published submission and
                                             per reference rule, with the verdict line;
                                             a rule not computed here says why
    reports/<submission_id>.html, .json      the full audit report of one computed row

The function is pure: the same entries and settings give the same bytes, in
whatever order the entries are passed (rows are sorted, JSON keys are sorted
and no clock is read); the index lists settings in the order given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import jinja2

from leaderboard.html_report import render_report_html

LEADERBOARD_SCHEMA_VERSION = "1.0"
"""Version of the published JSON layout (index and setting files)."""

KINDS = ("baseline", "submission")
"""A row is a reference rule computed by the benchmark itself, or a user's submission."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,127}")
"""Ids become file names in the published site and object-store keys, so only
URL-, path- and key-safe ids pass (letters, digits, '.' and '-')."""

NOT_REPORTED = "not reported in the audit"
"""Reason shown for a null value whose report gives no reason of its own."""

NOT_COMPUTED_LABEL = "not computed"
"""Verdict label of a row whose rule could not be computed (its reason follows)."""


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
        not installed, ...); the row shows this instead of numbers and has
        no report page. None for a computed row.
    """

    submission_id: str
    setting_id: str
    display_name: str
    kind: str
    submitted_at: str
    report: dict
    not_computed: str | None = None

    def __post_init__(self) -> None:
        _check_id("submission_id", self.submission_id)
        _check_id("setting_id", self.setting_id)
        if self.kind not in KINDS:
            raise ValueError(
                f"entry {self.submission_id!r}: field 'kind' must be one of {KINDS}, "
                f"got {self.kind!r}"
            )
        if not isinstance(self.report, dict):
            raise ValueError(
                f"entry {self.submission_id!r}: field 'report' must be a dict, "
                f"got {type(self.report).__name__}"
            )
        if self.not_computed is not None:
            if not isinstance(self.not_computed, str) or not self.not_computed.strip():
                raise ValueError(f"entry {self.submission_id!r}: field 'not_computed' must be "
                                 f"a non-empty reason, got {self.not_computed!r}")
            if self.report:
                raise ValueError(f"entry {self.submission_id!r}: field 'report' must be empty "
                                 "when 'not_computed' is set (a row has numbers or a reason, "
                                 "not both)")


@dataclass(frozen=True)
class SettingInfo:
    """What the leaderboard says about a setting besides its rows.

    Attributes
    ----------
    setting_id, task, mechanism, k, query_set : as in the settings registry.
    sealed : outcomes are never published; the matrix is filled on demand.
    cells_done, cells_total : executed cells of the outcome tensor and its size.
    """

    setting_id: str
    task: str
    mechanism: str
    k: int
    query_set: str
    sealed: bool
    cells_done: int
    cells_total: int

    def __post_init__(self) -> None:
        _check_id("setting_id", self.setting_id)
        if not 0 <= self.cells_done <= self.cells_total:
            raise ValueError(
                f"setting {self.setting_id!r}: field 'cells_done' must be between 0 and "
                f"cells_total={self.cells_total}, got {self.cells_done}"
            )


def _check_id(field: str, value: object) -> None:
    if not isinstance(value, str) or not _ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"field '{field}' must be 1-128 characters of letters, digits, '.' or '-' "
            f"starting with a letter or digit, got {value!r}"
        )


# ---------------------------------------------------------------- cells --

@dataclass(frozen=True)
class Cell:
    """One table cell: the text shown, the hover title and the number it sorts by."""

    text: str
    title: str
    sort: float | None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@dataclass(frozen=True)
class Interval:
    """A 95% interval from the report, or why it is missing."""

    low: float | None
    high: float | None
    reason: str | None

    @property
    def defined(self) -> bool:
        return self.low is not None and self.high is not None

    def text(self) -> str:
        if self.defined:
            return f"95% interval [{self.low:.3f}, {self.high:.3f}]"
        return f"95% interval n/a: {self.reason or NOT_REPORTED}"

    def to_json(self) -> dict | None:
        return {"low": self.low, "high": self.high} if self.defined else None


def _interval(report: dict, name: str) -> Interval:
    found = (report.get("intervals") or {}).get(name) or {}
    low, high = found.get("low"), found.get("high")
    if low is None or high is None:
        return Interval(None, None, found.get("reason"))
    return Interval(float(low), float(high), None)


def _reason(section: dict, key: str) -> str:
    """Why `section[key]` is null: the report's own reason field when it has one."""
    for name in (f"{key}_reason", "not_computable_reason", "reason"):
        text = section.get(name)
        if text:
            return str(text)
    return NOT_REPORTED


def _value_cell(section: dict, key: str, interval: Interval | None) -> Cell:
    value = section.get(key)
    if value is None:
        return Cell("n/a", f"n/a: {_reason(section, key)}", None)
    return Cell(_fmt(value), "" if interval is None else interval.text(), float(value))


def _success_cell(report: dict) -> Cell:
    return _value_cell(report.get("reference") or {}, "success_rule",
                       _interval(report, "success_rule"))


def _advantage_cell(report: dict) -> Cell:
    return _value_cell(report.get("reference") or {}, "advantage",
                       _interval(report, "advantage"))


def _best_fixed_cell(report: dict) -> Cell:
    reference = report.get("reference") or {}
    cell = _value_cell(reference, "success_best_fixed", _interval(report, "success_best_fixed"))
    if cell.sort is None or reference.get("best_fixed") is None:
        return cell
    return Cell(cell.text, f"{cell.title}; best-fixed experience {reference['best_fixed']}",
                cell.sort)


def _headroom_cell(report: dict) -> Cell:
    reference = report.get("reference") or {}
    cell = _value_cell(reference, "headroom", None)
    if cell.sort is None:
        return cell
    return Cell(cell.text, "oracle success minus best-fixed success", cell.sort)


def _gap_mark(gap: dict) -> str:
    """The significance mark: an arrow for a gap outside its shuffle envelope."""
    if not gap.get("gap_significant"):
        return ""
    direction = str(gap.get("direction") or "")
    if "below" in direction or (not direction and (gap.get("gap") or 0.0) < 0):
        return " \u25bc"
    return " \u25b2"


def _gap_cell(report: dict) -> Cell:
    gap = (report.get("gap") or {}).get("all") or {}
    value = gap.get("gap")
    if value is None:
        return Cell("n/a", f"n/a: {_reason(gap, 'gap')}", None)
    envelope = gap.get("gap_envelope")
    parts = [_interval(report, "gap").text()]
    if envelope and None not in envelope:
        parts.append(f"shuffle envelope [{envelope[0]:.3f}, {envelope[1]:.3f}]")
    if gap.get("gap_significant"):
        parts.append(f"significant ({gap.get('direction') or 'outside the envelope'})")
    else:
        parts.append("not significant")
    return Cell(f"{value:+.3f}{_gap_mark(gap)}", "; ".join(parts), float(value))


def _top_pick_cell(report: dict) -> Cell:
    concentration = report.get("concentration") or {}
    share = concentration.get("top_pick_share")
    oracle = concentration.get("oracle_top_pick_share")
    if share is None:
        return Cell("n/a", f"n/a: {_reason(concentration, 'top_pick_share')}", None)
    ratio = concentration.get("concentration_ratio")
    text = f"{share:.2f} / {'n/a' if oracle is None else f'{oracle:.2f}'}"
    title = (f"top pick {concentration.get('top_pick')} chosen in {share:.1%} of scenes; "
             f"oracle's top share {'n/a' if oracle is None else f'{oracle:.1%}'}; "
             f"ratio {'n/a' if ratio is None else f'{ratio:.2f}'}")
    return Cell(text, title, None if ratio is None else float(ratio))


def _auroc_cell(report: dict) -> Cell:
    ranking = report.get("ranking") or {}
    cell = _value_cell(ranking, "within_query_auroc", _interval(report, "within_query_auroc"))
    if cell.sort is None:
        return cell
    pooled = ranking.get("pooled_auroc")
    eligible = ranking.get("within_query_eligible_share")
    extra = [f"pooled AUROC {_fmt(pooled)}"]
    if eligible is not None:
        extra.append(f"eligible scenes {eligible:.0%}")
    return Cell(cell.text, "; ".join([cell.title, *extra]), cell.sort)


@dataclass(frozen=True)
class Column:
    """A numeric column of the setting table."""

    key: str
    header: str
    explanation: str
    cell: Callable[[dict], Cell]


COLUMNS: tuple[Column, ...] = (
    Column("success", "success", "mean success of the rule's selection over all scenes",
           _success_cell),
    Column("advantage", "A", "advantage: (success - random) / (oracle - random); "
           "n/a when oracle - random < 0.05", _advantage_cell),
    Column("best_fixed", "best-fixed", "success of always choosing the single best "
           "experience (hindsight)", _best_fixed_cell),
    Column("headroom", "headroom", "oracle success minus best-fixed success", _headroom_cell),
    Column("gap", "gap", "success minus the mean of frequency-matched shuffles; "
           "\u25b2/\u25bc marks a gap outside the 95% shuffle envelope", _gap_cell),
    Column("top_pick", "top pick / oracle", "share of scenes given to the most chosen "
           "experience, against the oracle's; sorts by their ratio", _top_pick_cell),
    Column("within_auroc", "within-query AUROC", "ranking quality among the candidates of "
           "one scene, averaged over eligible scenes", _auroc_cell),
)
"""The numeric columns, in page order (AUDIT_SPEC's leaderboard columns)."""


# ------------------------------------------------------------------ rows --

def _verdict(report: dict) -> dict:
    """The verdict line of a computed row."""
    verdict = report.get("verdict") or {}
    label = verdict.get("label")
    text = verdict.get("text")
    return {"label": label or "n/a", "text": text or f"no verdict: {NOT_REPORTED}"}


def _entry_verdict(entry: LeaderboardEntry) -> dict:
    if entry.not_computed is not None:
        return {"label": NOT_COMPUTED_LABEL, "text": entry.not_computed}
    return _verdict(entry.report)


def _not_computed_json(entry: LeaderboardEntry) -> dict:
    """The row of a rule not computed here: its reason and no numbers or links."""
    return {"submission_id": entry.submission_id, "display_name": entry.display_name,
            "kind": entry.kind, "submitted_at": entry.submitted_at, "report_html": None,
            "report_json": None, "not_computed": entry.not_computed,
            "verdict": _entry_verdict(entry)}


def _row_json(entry: LeaderboardEntry) -> dict:
    """The machine-readable row: the report's numbers the table shows, plus links."""
    if entry.not_computed is not None:
        return _not_computed_json(entry)
    report = entry.report
    reference = report.get("reference") or {}
    concentration = report.get("concentration") or {}
    ranking = report.get("ranking") or {}
    gap = (report.get("gap") or {}).get("all") or {}

    def interval(name: str) -> dict | None:
        return _interval(report, name).to_json()

    return {
        "submission_id": entry.submission_id,
        "display_name": entry.display_name,
        "kind": entry.kind,
        "submitted_at": entry.submitted_at,
        "report_html": f"../reports/{entry.submission_id}.html",
        "report_json": f"../reports/{entry.submission_id}.json",
        "success_rule": {"value": reference.get("success_rule"),
                         "interval": interval("success_rule")},
        "advantage": {"value": reference.get("advantage"), "interval": interval("advantage"),
                      "reason": reference.get("advantage_reason")},
        "success_best_fixed": {"value": reference.get("success_best_fixed"),
                               "interval": interval("success_best_fixed"),
                               "experience": reference.get("best_fixed")},
        "headroom": {"value": reference.get("headroom")},
        "gap": {"value": gap.get("gap"), "interval": interval("gap"),
                "envelope": gap.get("gap_envelope"),
                "significant": gap.get("gap_significant"), "direction": gap.get("direction")},
        "top_pick_share": {"value": concentration.get("top_pick_share"),
                           "oracle": concentration.get("oracle_top_pick_share"),
                           "ratio": concentration.get("concentration_ratio"),
                           "experience": concentration.get("top_pick")},
        "within_query_auroc": {"value": ranking.get("within_query_auroc"),
                               "interval": interval("within_query_auroc"),
                               "reason": ranking.get("not_computable_reason")},
        "not_computed": None,
        "verdict": _verdict(report),
    }


def _row_order(entry: LeaderboardEntry) -> tuple:
    """Default order: success descending (unknown last, rules not computed after them),
    then submission time and id."""
    success = (entry.report.get("reference") or {}).get("success_rule")
    return (entry.not_computed is not None, success is None, -(success or 0.0),
            entry.submitted_at, entry.submission_id)


def _row_view(entry: LeaderboardEntry) -> dict:
    if entry.not_computed is not None:
        cell = Cell("n/a", f"{NOT_COMPUTED_LABEL}: {entry.not_computed}", None)
        cells = [cell] * len(COLUMNS)
    else:
        cells = [column.cell(entry.report) for column in COLUMNS]
    return {"entry": entry, "cells": cells, "verdict": _entry_verdict(entry)}


def _leader(entries: Sequence[LeaderboardEntry]) -> dict | None:
    """The submission (not a reference rule) with the highest success on a setting."""
    submissions = [e for e in entries if e.kind == "submission" and e.not_computed is None
                   and (e.report.get("reference") or {}).get("success_rule") is not None]
    if not submissions:
        return None
    best = sorted(submissions, key=_row_order)[0]
    return {"submission_id": best.submission_id, "display_name": best.display_name,
            "success_rule": best.report["reference"]["success_rule"],
            "verdict": _verdict(best.report)["label"]}


# ------------------------------------------------------------- rendering --

@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("leaderboard", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def _render(template: str, **context: Any) -> bytes:
    return _environment().get_template(template).render(**context).encode("utf-8")


def _json_bytes(document: object) -> bytes:
    text = json.dumps(document, sort_keys=True, indent=2, allow_nan=False)
    return (text + "\n").encode("utf-8")


def _non_finite_field(value: object, path: str = "") -> str | None:
    """Dotted path of the first NaN or infinite float in a JSON-like value, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(report)"
    children: Iterable[tuple[object, object]] = ()
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, (list, tuple)):
        children = enumerate(value)
    for key, child in children:
        found = _non_finite_field(child, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def _check_report(entry: LeaderboardEntry) -> None:
    bad = _non_finite_field(entry.report)
    if bad is not None:
        raise ValueError(f"entry {entry.submission_id!r}: report field '{bad}' is NaN or "
                         "infinite; reports must use null for undefined values")


def _group(entries: Sequence[LeaderboardEntry],
           settings: Sequence[SettingInfo]) -> dict[str, list[LeaderboardEntry]]:
    """Entries per setting id, sorted; checks ids are unique and settings known."""
    groups: dict[str, list[LeaderboardEntry]] = {}
    for info in settings:
        if info.setting_id in groups:
            raise ValueError(f"setting_id {info.setting_id!r} is listed twice in settings")
        groups[info.setting_id] = []
    seen: dict[str, str] = {}
    for entry in entries:
        if entry.submission_id in seen:
            raise ValueError(
                f"submission_id {entry.submission_id!r} appears twice (settings "
                f"{seen[entry.submission_id]!r} and {entry.setting_id!r}); "
                "each published row needs its own id")
        seen[entry.submission_id] = entry.setting_id
        _check_report(entry)
        if entry.setting_id not in groups:
            raise ValueError(f"entry {entry.submission_id!r}: setting_id "
                             f"{entry.setting_id!r} is not among the settings")
        groups[entry.setting_id].append(entry)
    return {sid: sorted(rows, key=_row_order) for sid, rows in groups.items()}


def _setting_files(info: SettingInfo, rows: list[LeaderboardEntry]) -> dict[str, bytes]:
    base = f"settings/{info.setting_id}"
    document = {"schema_version": LEADERBOARD_SCHEMA_VERSION, "setting": asdict(info),
                "columns": [{"key": c.key, "header": c.header, "explanation": c.explanation}
                            for c in COLUMNS],
                "rows": [_row_json(entry) for entry in rows]}
    html = _render("setting.html", setting=info, columns=COLUMNS,
                   rows=[_row_view(entry) for entry in rows])
    return {f"{base}.html": html, f"{base}.json": _json_bytes(document)}


def _index_files(settings: Sequence[SettingInfo],
                 groups: dict[str, list[LeaderboardEntry]]) -> dict[str, bytes]:
    summaries = []
    for info in settings:  # the caller's order: the registry's publication order
        rows = groups[info.setting_id]
        summaries.append({
            **asdict(info),
            "page": f"settings/{info.setting_id}.html",
            "json": f"settings/{info.setting_id}.json",
            "n_submissions": sum(e.kind == "submission" for e in rows),
            "n_baselines": sum(e.kind == "baseline" for e in rows),
            "n_not_computed": sum(e.not_computed is not None for e in rows),
            "leader": _leader(rows),
        })
    document = {"schema_version": LEADERBOARD_SCHEMA_VERSION, "settings": summaries}
    return {"index.html": _render("index.html", settings=summaries),
            "index.json": _json_bytes(document)}


def _report_files(entry: LeaderboardEntry) -> dict[str, bytes]:
    base = f"reports/{entry.submission_id}"
    return {f"{base}.html": render_report_html(entry.report).encode("utf-8"),
            f"{base}.json": _json_bytes(entry.report)}


def build_leaderboard(entries: Sequence[LeaderboardEntry],
                      settings: Sequence[SettingInfo]) -> dict[str, bytes]:
    """Render the whole public leaderboard as static files.

    Args:
        entries: every published row (submissions and reference rules), each
            with its audit report or its `not_computed` reason; submission ids
            must be unique.
        settings: every setting to list, including those without rows yet.

    Returns:
        A mapping from a relative path (``index.html``,
        ``settings/<id>.json``, ``reports/<id>.html``, ...) to the file's
        bytes. A row not computed has no report files. The same inputs
        give the same bytes, in whatever order the entries come; settings
        are listed in the order given.

    Raises:
        ValueError: an entry names an unknown setting, an id is used twice, or
            a report holds NaN/infinity (the message names the field).
    """
    groups = _group(entries, settings)
    files = _index_files(settings, groups)
    for info in settings:
        files.update(_setting_files(info, groups[info.setting_id]))
    for entry in sorted(entries, key=lambda e: e.submission_id):
        if entry.not_computed is None:
            files.update(_report_files(entry))
    return dict(sorted(files.items()))
