"""The numbers of one leaderboard row as table cells: text, hover title and sort key.

Pure functions of an audit report dict (`AuditReport.to_dict()`); a value the
report does not carry is "n/a" with the report's own reason, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NOT_REPORTED = "not reported in the audit"
"""Reason shown for a null value whose report gives no reason of its own."""


@dataclass(frozen=True)
class TableCell:
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


def report_interval(report: dict, name: str) -> Interval:
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


def _value_cell(section: dict, key: str, interval: Interval | None) -> TableCell:
    value = section.get(key)
    if value is None:
        return TableCell("n/a", f"n/a: {_reason(section, key)}", None)
    return TableCell(_fmt(value), "" if interval is None else interval.text(), float(value))


def success_cell(report: dict) -> TableCell:
    return _value_cell(report.get("reference") or {}, "success_rule",
                       report_interval(report, "success_rule"))


def advantage_cell(report: dict) -> TableCell:
    return _value_cell(report.get("reference") or {}, "advantage",
                       report_interval(report, "advantage"))


def _gap_mark(gap: dict) -> str:
    """The significance mark: an arrow for a gap outside its shuffle envelope."""
    if not gap.get("gap_significant"):
        return ""
    direction = str(gap.get("direction") or "")
    if "below" in direction or (not direction and (gap.get("gap") or 0.0) < 0):
        return " \u25bc"
    return " \u25b2"


def gap_cell(report: dict) -> TableCell:
    gap = (report.get("gap") or {}).get("all") or {}
    value = gap.get("gap")
    if value is None:
        return TableCell("n/a", f"n/a: {_reason(gap, 'gap')}", None)
    envelope = gap.get("gap_envelope")
    parts = [report_interval(report, "gap").text()]
    if envelope and None not in envelope:
        parts.append(f"shuffle envelope [{envelope[0]:.3f}, {envelope[1]:.3f}]")
    if gap.get("gap_significant"):
        parts.append(f"significant ({gap.get('direction') or 'outside the envelope'})")
    else:
        parts.append("not significant")
    return TableCell(f"{value:+.3f}{_gap_mark(gap)}", "; ".join(parts), float(value))


def top_pick_cell(report: dict) -> TableCell:
    concentration = report.get("concentration") or {}
    share = concentration.get("top_pick_share")
    oracle = concentration.get("oracle_top_pick_share")
    if share is None:
        return TableCell("n/a", f"n/a: {_reason(concentration, 'top_pick_share')}", None)
    ratio = concentration.get("concentration_ratio")
    text = f"{share:.2f} / {'n/a' if oracle is None else f'{oracle:.2f}'}"
    title = (f"top pick {concentration.get('top_pick')} chosen in {share:.1%} of scenes; "
             f"oracle's top share {'n/a' if oracle is None else f'{oracle:.1%}'}; "
             f"ratio {'n/a' if ratio is None else f'{ratio:.2f}'}")
    return TableCell(text, title, None if ratio is None else float(ratio))


def auroc_cell(report: dict) -> TableCell:
    ranking = report.get("ranking") or {}
    cell = _value_cell(ranking, "within_query_auroc", report_interval(report, "within_query_auroc"))
    if cell.sort is None:
        return cell
    pooled = ranking.get("pooled_auroc")
    eligible = ranking.get("within_query_eligible_share")
    extra = [f"pooled AUROC {_fmt(pooled)}"]
    if eligible is not None:
        extra.append(f"eligible scenes {eligible:.0%}")
    return TableCell(cell.text, "; ".join([cell.title, *extra]), cell.sort)


@dataclass(frozen=True)
class Column:
    """A numeric column of the setting table."""

    key: str
    header: str
    explanation: str
    cell: Callable[[dict], TableCell]


COLUMNS: tuple[Column, ...] = (
    Column("advantage", "A", "advantage: (success - random) / (oracle - random), with its 95% "
           "interval; n/a when oracle - random < 0.05", advantage_cell),
    Column("success", "success", "mean success of the rule's selection over all scenes",
           success_cell),
    Column("gap", "gap", "success minus the mean of frequency-matched shuffles; "
           "\u25b2/\u25bc marks a gap outside the 95% shuffle envelope", gap_cell),
    Column("top_pick", "top pick / oracle", "share of scenes given to the most chosen "
           "experience, against the oracle's; sorts by their ratio", top_pick_cell),
    Column("within_auroc", "within-query AUROC", "ranking quality among the candidates of "
           "one scene, averaged over eligible scenes", auroc_cell),
)
"""The numeric columns, in page order (AUDIT_SPEC's leaderboard columns)."""
