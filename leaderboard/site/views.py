"""What the published pages say about a setting and across settings.

`setting_view` ranks the computed rows of one setting (`leaderboard.site.standings`),
picks out its reference lines and says whether it discriminates;
`cross_setting` lays out A per rule over the settings that discriminate. The
JSON rows and the row views the templates format are built here too. Pure:
entries in, frozen views and dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.site import standings
from leaderboard.site.entries import LeaderboardEntry, SettingInfo
from leaderboard.site.row_cells import (NOT_REPORTED, TableCell, advantage_cell, auroc_cell, gap_cell,
                                    report_interval, success_cell, top_pick_cell)


def _verdict(report: dict) -> dict:
    """The verdict line of a computed row."""
    verdict = report.get("verdict") or {}
    label = verdict.get("label")
    text = verdict.get("text")
    return {"label": label or "n/a", "text": text or f"no verdict: {NOT_REPORTED}"}


def reference_rule(entry: LeaderboardEntry) -> str | None:
    """The hindsight rule (random, oracle, best_fixed) a reference row computes, else None."""
    if entry.kind != "baseline":
        return None
    for rule in standings.REFERENCE_LINES:
        if entry.submission_id == f"baseline-{rule.replace('_', '-')}-{entry.setting_id}":
            return rule
    return None


def rule_key(entry: LeaderboardEntry) -> str:
    """What names one rule across settings: the upload's id for a submission (its rows are
    `<upload id>.<setting id>`), the rule's id without the setting for a reference rule."""
    suffix = ("." if entry.kind == "submission" else "-") + entry.setting_id
    sid = entry.submission_id
    return sid[: -len(suffix)] if sid.endswith(suffix) and len(sid) > len(suffix) else sid


def row_json(entry: LeaderboardEntry, standing: standings.Standing | None) -> dict:
    """The machine-readable row: the report's numbers the table shows, plus links."""
    report = entry.report
    reference = report.get("reference") or {}
    concentration = report.get("concentration") or {}
    ranking = report.get("ranking") or {}
    gap = (report.get("gap") or {}).get("all") or {}

    def interval(name: str) -> dict | None:
        return report_interval(report, name).to_json()

    return {
        "submission_id": entry.submission_id,
        "display_name": entry.display_name,
        "submitter": entry.submitter or None,
        "kind": entry.kind,
        "role": "ranked" if standing is not None else "reference",
        "submitted_at": entry.submitted_at,
        "report_html": f"../reports/{entry.submission_id}.html",
        "report_json": f"../reports/{entry.submission_id}.json",
        "rank": None if standing is None else standing.rank,
        "standing": None if standing is None else standing.to_json(),
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
        "verdict": _verdict(report),
    }


def _tie_order(entry: LeaderboardEntry) -> tuple:
    """Order among equals: submission time, then id (so any input order gives the same page)."""
    return (entry.submitted_at, entry.submission_id)


def _mark(flag: bool | None, yes: str, no: str) -> dict:
    if flag is None:
        return {"text": "n/a", "yes": None, "label": "not computed"}
    return {"text": "yes" if flag else "no", "yes": flag, "label": yes if flag else no}


def ranked_view(entry: LeaderboardEntry, standing: standings.Standing, metric: str) -> dict:
    """What one ranked row of the setting page shows."""
    report = entry.report
    a_cell, s_cell = advantage_cell(report), success_cell(report)
    main = a_cell if metric == standings.RANK_BY_ADVANTAGE else s_cell
    interval = report_interval(report, metric)
    main_text = main.text + (f" [{interval.low:.3f}, {interval.high:.3f}]"
                             if interval.defined and main.sort is not None else "")
    distance = standing.best_fixed_distance
    best = _mark(standing.beats_best_fixed, "beats best-fixed", "does not beat best-fixed")
    if distance is not None:
        best["text"] += f" ({distance:+.3f})"
    shuffle = _mark(standing.beats_shuffle, "gap above its shuffle envelope",
                    "gap not above its shuffle envelope")
    return {"entry": entry, "standing": standing, "main": TableCell(main_text, main.title, main.sort),
            "cells": {"success": s_cell, "advantage": a_cell, "gap": gap_cell(report),
                      "top_pick": top_pick_cell(report), "within_auroc": auroc_cell(report)},
            "best": best, "shuffle": shuffle, "verdict": _verdict(report)}


@dataclass(frozen=True)
class SettingView:
    """Everything the pages say about one setting."""

    info: SettingInfo
    discrimination: standings.Discrimination
    metric: str
    references: list[standings.ReferenceLine]
    reference_entries: list[LeaderboardEntry]
    ranked: list[tuple[LeaderboardEntry, standings.Standing]]
    thumbnail: str | None

    @property
    def best_submission(self) -> tuple[LeaderboardEntry, standings.Standing] | None:
        """The highest-placed submission whose ranking value is defined."""
        return next(((e, s) for e, s in self.ranked if e.kind == "submission"
                     and s.rank is not None), None)

    @property
    def best_per_submitter(self) -> list[str]:
        """The row id of each submitter's highest-placed submission, in ranking order."""
        seen, best = set(), []
        for entry, _standing in self.ranked:
            who = entry.submitter_id or entry.submitter or entry.submission_id
            if entry.kind == "submission" and who not in seen:
                seen.add(who)
                best.append(entry.submission_id)
        return best

    def reference(self, rule: str) -> standings.ReferenceLine | None:
        return next((line for line in self.references if line.rule == rule), None)


SEALED_DISCRIMINATION = standings.Discrimination(None, None, (
    "sealed: its reports release success rounded to the Ladder's margin, and only a "
    "submitter's improvements, so it is not compared across settings"))
"""A sealed setting's label: its released numbers are neither exact nor every row's."""


def setting_view(info: SettingInfo, rows: Sequence[LeaderboardEntry],
                 thumbnail: str | None = None) -> SettingView:
    """Rank the computed rows of one setting and pick out its reference lines."""
    rows = sorted(rows, key=_tie_order)
    reports = [e.report for e in rows]
    found = SEALED_DISCRIMINATION if info.sealed else standings.discrimination(reports)
    metric = standings.rank_metric(found)
    hindsight = {rule: e for e in rows if (rule := reference_rule(e)) is not None}
    references = standings.reference_lines(
        reports, {rule: (e.submission_id, e.report) for rule, e in hindsight.items()})
    competing = [e for e in rows if reference_rule(e) is None]
    by_id = {e.submission_id: e for e in competing}
    ranked = standings.rank_rows([standings.standing(e.submission_id, e.report)
                                  for e in competing], metric)
    return SettingView(info, found, metric, references,
                       [hindsight[r] for r in standings.REFERENCE_LINES if r in hindsight],
                       [(by_id[s.row_id], s) for s in ranked], thumbnail)


# ------------------------------------------------------------ summaries --

def _best_submission_json(view: SettingView) -> dict | None:
    best = view.best_submission
    if best is None:
        return None
    entry, standing = best
    return {"submission_id": entry.submission_id, "display_name": entry.display_name,
            "report_html": f"reports/{entry.submission_id}.html", **standing.to_json(),
            "verdict": _verdict(entry.report)["label"]}


def _reference_json(view: SettingView, rule: str) -> dict | None:
    line = view.reference(rule)
    return None if line is None else line.to_json()


def setting_summary(view: SettingView) -> dict:
    info = view.info
    return {**info.to_json(),
            "page": f"settings/{info.setting_id}.html",
            "json": f"settings/{info.setting_id}.json",
            "thumbnail": view.thumbnail,
            "discrimination": view.discrimination.to_json(),
            "ranked_by": view.metric,
            "best_fixed": _reference_json(view, "best_fixed"),
            "oracle": _reference_json(view, "oracle"),
            "random": _reference_json(view, "random"),
            "n_submissions": sum(e.kind == "submission" for e, _ in view.ranked),
            "n_ranked": len(view.ranked),
            "best_submission": _best_submission_json(view)}


@dataclass(frozen=True)
class CrossSetting:
    """Rules x discriminating settings, A with intervals (reference rules and submissions)."""

    settings: list[str]
    left_out: list[tuple[str, str]]
    rules: list[tuple[str, str]]
    cells: dict[tuple[str, str], dict]
    best_fixed: dict[str, dict]

    def to_json(self) -> dict:
        return {"settings": self.settings,
                "left_out": [{"setting_id": s, "reason": r} for s, r in self.left_out],
                "rules": [{"key": k, "display_name": n,
                           "cells": {s: self.cells[(k, s)] for s in self.settings
                                     if (k, s) in self.cells}} for k, n in self.rules],
                "best_fixed": self.best_fixed}


def _left_out_reason(view: SettingView) -> str:
    """Why a setting is not compared across settings, with its failed policy gates if any."""
    gates = view.info.policy_gates_failed
    return view.discrimination.reason + (f"; failed policy gates: {'; '.join(gates)}" if gates else "")


def cross_setting(views: Sequence[SettingView]) -> CrossSetting:
    """A per rule on every setting that discriminates; the others are listed with why."""
    used = [v for v in views if v.discrimination.discriminates]
    left_out = [(v.info.setting_id, _left_out_reason(v)) for v in views
                if v.discrimination.discriminates is False or v.info.sealed]
    cells: dict[tuple[str, str], dict] = {}
    names: dict[str, str] = {}
    for view in used:
        for entry, standing in view.ranked:
            key = rule_key(entry)
            names.setdefault(key, entry.display_name)
            cells[(key, view.info.setting_id)] = {
                **standing.advantage.to_json(), "row": entry.submission_id,
                "matters": standing.matters, "kind": entry.kind}
    best_fixed = {}
    for view in used:
        line = view.reference("best_fixed")
        if line is not None:
            best_fixed[view.info.setting_id] = {"advantage": line.advantage,
                                                "success": line.success.value}

    def mean_a(key: str) -> float:
        values = [c["value"] for (k, _), c in cells.items() if k == key and c["value"] is not None]
        return -(sum(values) / len(values)) if values else math.inf

    keys = sorted(names, key=lambda k: (mean_a(k), names[k], k))
    return CrossSetting([v.info.setting_id for v in used], left_out,
                        [(k, names[k]) for k in keys], cells, best_fixed)
