"""The readout leaderboard's files: a page per readout setting, a page per row, their JSON.

`readout_files` renders, for every readout setting, ``settings/<id>.html`` and ``.json``
(the public submissions ranked as `readout_views` says, the reference representations of
the bank's reference report beside them, the paper's natural-MAE-against-gain plot and the
ranking plot) and ``reports/<row id>.html`` and ``.json`` for every row; `readout_cards`
is what the index says of each setting. Pure: the same rows give the same bytes.
Pages use the site's base template (phone layout, sortable tables).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

import jinja2

from leaderboard.errors import BrokenContract
from leaderboard.site.readout_entries import (PRIMARY, ReadoutEntry, ReadoutSettingInfo,
                                              reference_entries)
from leaderboard.site.readout_figures import IntervalBar, RepresentationPoint, board_figure, ranking_figure
from leaderboard.site.readout_report import BESIDE, METRIC_LABELS
from leaderboard.site.readout_views import HYPOTHESES, RANK_BY, ReadoutRow, ranked_rows, reference_rows

SCHEMA_VERSION = "1.0"
"""Version of the readout pages' JSON layout."""

UNITLESS = ("gain", "gain_error", "slope")
"""Metrics without the coordinate's unit."""


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("leaderboard.site", "templates"),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def _render(template: str, **context) -> bytes:
    return _environment().get_template(template).render(**context).encode("utf-8")


def _json_bytes(document: object) -> bytes:
    return (json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n").encode("utf-8")


def _point(entry: ReadoutEntry) -> RepresentationPoint:
    mae, gain = entry.summary.get("mae_natural") or {}, entry.summary.get("gain") or {}
    return RepresentationPoint(entry.display_name, mae.get("mean"), mae.get("low"), mae.get("high"),
                               gain.get("mean"), gain.get("low"), gain.get("high"))


def _group(settings: Sequence[ReadoutSettingInfo],
           entries: Sequence[ReadoutEntry]) -> dict[str, list[ReadoutEntry]]:
    groups: dict[str, list[ReadoutEntry]] = {}
    for info in settings:
        if info.setting_id in groups:
            raise BrokenContract(f"readout setting {info.setting_id!r} is listed twice")
        groups[info.setting_id] = reference_entries(info)
    seen = {e.row_id for rows in groups.values() for e in rows}
    for entry in entries:
        if entry.kind != "submission":
            raise BrokenContract(f"readout row {entry.row_id!r}: reference rows come from the "
                                 "setting's reference report, not from the entries")
        if entry.setting_id not in groups:
            raise BrokenContract(f"readout row {entry.row_id!r}: setting_id {entry.setting_id!r} is "
                                 "not among the readout settings")
        if entry.row_id in seen:
            raise BrokenContract(f"readout row id {entry.row_id!r} appears twice")
        seen.add(entry.row_id)
        groups[entry.setting_id].append(entry)
    return groups


def _unit(metric: str, unit: str) -> str:
    return "" if metric in UNITLESS else unit


def _figures(info: ReadoutSettingInfo, ranked: list[ReadoutRow], references: list[ReadoutRow]) -> dict:
    board = board_figure([_point(r.entry) for r in ranked], [_point(r.entry) for r in references], info.unit,
                         f"Natural MAE against endpoint gain on {info.setting_id}: submissions in colour, "
                         "reference representations in grey")
    bars = [IntervalBar(r.entry.display_name, r.numbers[RANK_BY].mean, r.numbers[RANK_BY].low,
                        r.numbers[RANK_BY].high, reference=r.entry.kind == "reference")
            for r in [*ranked, *references]]
    ranking = ranking_figure(bars, f"controlled MAE ({info.unit})",
                             f"Controlled MAE with its 95% interval on {info.setting_id}: ranked rows in blue, "
                             "reference rows in grey")
    return {"board": board, "ranking": ranking}


def _setting_document(info: ReadoutSettingInfo, ranked: list[ReadoutRow], references: list[ReadoutRow]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "kind": "readout",
            "setting": {"setting_id": info.setting_id, "task": info.task, "version": info.version,
                        "coordinate": info.coordinate, "unit": info.unit, "audited_split": "confirm",
                        "initializations": info.initializations, "observations": info.observations,
                        "accepts_submissions": info.accepts_submissions,
                        "unavailable_reason": info.unavailable_reason},
            "ranked_by": RANK_BY, "metrics": list(PRIMARY),
            "rows": [r.to_json() for r in ranked], "reference_rows": [r.to_json() for r in references],
            "downloads": {d.key: d.path for d in info.downloads}}


def _reference_notes(info: ReadoutSettingInfo) -> list[str]:
    return list((info.reference or {}).get("notes") or [])


def _setting_files(info: ReadoutSettingInfo, rows: list[ReadoutEntry], notice: str | None) -> dict[str, bytes]:
    ranked, references = ranked_rows(rows), reference_rows(rows)
    html = _render("readout_setting.html", setting=info, ranked=ranked, references=references,
                   metrics=[(m, METRIC_LABELS[m], _unit(m, info.unit)) for m in PRIMARY],
                   hypotheses=HYPOTHESES, beside=BESIDE, notes=_reference_notes(info),
                   figures=_figures(info, ranked, references), notice=notice)
    base = f"settings/{info.setting_id}"
    return {f"{base}.html": html, f"{base}.json": _json_bytes(_setting_document(info, ranked, references))}


def _report_files(info: ReadoutSettingInfo, entry: ReadoutEntry, references: list[ReadoutEntry],
                  notice: str | None) -> dict[str, bytes]:
    others = [r for r in references if r.row_id != entry.row_id]
    board = board_figure([_point(entry)], [_point(r) for r in others], info.unit,
                         f"Natural MAE against endpoint gain: {entry.display_name} (colour) against the "
                         "reference representations (grey)")
    rep = entry.representation
    metrics = [(m, METRIC_LABELS[m], _unit(m, info.unit), entry.summary.get(m) or {}) for m in METRIC_LABELS]
    html = _render("readout_report.html", setting=info, entry=entry, rep=rep, report=entry.report,
                   metrics=metrics, beside=BESIDE, board=board, notice=notice)
    base = f"reports/{entry.row_id}"
    return {f"{base}.html": html, f"{base}.json": _json_bytes(entry.report)}


def readout_files(settings: Sequence[ReadoutSettingInfo], entries: Sequence[ReadoutEntry],
                  notice: str | None = None) -> dict[str, bytes]:
    """Every file of the readout leaderboard.

    Args:
        settings: the readout settings, each with its reference report (its rows).
        entries: the public submissions' rows.

    Raises:
        BrokenContract: a row names an unknown setting, an id is used twice, or a row of
            `entries` is not a submission.
    """
    files: dict[str, bytes] = {}
    groups = _group(settings, entries)
    for info in settings:
        rows = groups[info.setting_id]
        files.update(_setting_files(info, rows, notice))
        references = [e for e in rows if e.kind == "reference"]
        for entry in rows:
            files.update(_report_files(info, entry, references, notice))
    return files


def readout_cards(settings: Sequence[ReadoutSettingInfo], entries: Sequence[ReadoutEntry]) -> list[dict]:
    """What the index says of each readout setting: its page, counts, and its best submission."""
    groups = _group(settings, entries)
    cards = []
    for info in settings:
        ranked = ranked_rows(groups[info.setting_id])
        best = ranked[0] if ranked and ranked[0].rank is not None else None
        cards.append({"setting_id": info.setting_id, "page": info.page, "task": info.task,
                      "coordinate": info.coordinate, "unit": info.unit,
                      "initializations": info.initializations.get("confirm"),
                      "references": sum(1 for e in groups[info.setting_id] if e.kind == "reference"),
                      "submissions": len(ranked), "accepts_submissions": info.accepts_submissions,
                      "best": None if best is None else {
                          "name": best.entry.display_name, "report_html": f"reports/{best.entry.row_id}.html",
                          "value": best.numbers[RANK_BY].text, "interval": best.numbers[RANK_BY].interval}})
    return cards
