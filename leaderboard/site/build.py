"""Render the public leaderboard as static files: HTML and JSON, no server code.

The publish job calls `build_leaderboard` with every published report and writes the
returned files (keyed by path under the site root) into the object store, so reading
the leaderboard costs no Python and no Redis. Pages are self-contained and follow the
audit's reading (`leaderboard.site.standings`); a reference rule not computed here is
not published (its reason goes to the operator's logs).

The function is pure: the same entries and settings give the same bytes, in whatever
order the entries are passed. Files, ranking and links: docs/leaderboard.md, and
docs/service.md ("The published leaderboard").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import jinja2

from leaderboard.errors import BrokenContract
from leaderboard.site import figures as site_figures, standings
from leaderboard.site.documents import (CROISSANT, DATASET_CARD, DOCS_INDEX, Documents,
                                        render_markdown, site_path)
from leaderboard.site.html_report import ReportContext, render_report_html
from leaderboard.site.entries import LeaderboardEntry, SettingInfo
from leaderboard.site.row_cells import COLUMNS
from leaderboard.site.readout_entries import ReadoutEntry, ReadoutSettingInfo
from leaderboard.site.readout_pages import readout_cards, readout_files
from leaderboard.site.views import (CrossSetting, SettingView, cross_setting, ranked_view,
                                    row_json, setting_summary, setting_view)

LEADERBOARD_SCHEMA_VERSION = "1.0"
"""Version of the published JSON layout (index and setting files)."""

PAPERS = {
    "retrieval": {"title": "Beyond End-Task Success: How to Audit Visual Experience "
                           "Retrieval in Robotics", "arxiv": "2609.26567"},
    "readout": {"title": "Natural State-Prediction Accuracy can Hide Weak Controlled "
                         "Responsiveness in VLA Readouts", "arxiv": "2609.34684"},
}
"""The papers the benchmark follows, linked from the index (arXiv abstract pages)."""

API_LINKS = {"api": "../api/v1/docs", "openapi": "../api/v1/openapi.json"}
"""The API's live reference, relative to the site root (the API is served beside the site)."""

MAX_EXPERIENCES_SHOWN = 20
"""Experiences drawn in a setting page's selection figure (the most chosen ones)."""


# ------------------------------------------------------------- rendering --

@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("leaderboard.site", "templates"),
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
        raise BrokenContract(f"entry {entry.submission_id!r}: report field '{bad}' is NaN or "
                          "infinite; reports must use null for undefined values")


def _group(entries: Sequence[LeaderboardEntry],
           settings: Sequence[SettingInfo]) -> dict[str, list[LeaderboardEntry]]:
    """Computed entries per setting id; checks ids are unique and settings known.

    Entries not computed are dropped here: the public site shows what was measured.
    """
    groups: dict[str, list[LeaderboardEntry]] = {}
    for info in settings:
        if info.setting_id in groups:
            raise BrokenContract(f"setting_id {info.setting_id!r} is listed twice in settings")
        groups[info.setting_id] = []
    seen: dict[str, str] = {}
    for entry in entries:
        if entry.submission_id in seen:
            raise BrokenContract(
                f"submission_id {entry.submission_id!r} appears twice (settings "
                f"{seen[entry.submission_id]!r} and {entry.setting_id!r}); "
                "each published row needs its own id")
        seen[entry.submission_id] = entry.setting_id
        _check_report(entry)
        if entry.setting_id not in groups:
            raise BrokenContract(f"entry {entry.submission_id!r}: setting_id "
                              f"{entry.setting_id!r} is not among the settings")
        if entry.not_computed is None:
            groups[entry.setting_id].append(entry)
    return groups


def _selection_shares(view: SettingView, limit: int = 3) -> dict | None:
    """Shares of scenes per experience of the top `limit` ranked rows, and the oracle's."""
    top = [(e, e.report["concentration"]) for e, s in view.ranked
           if s.rank is not None and (e.report.get("concentration") or {}).get("selection_counts")
           and (e.report.get("concentration") or {}).get("oracle_counts")][:limit]
    if not top:
        return None
    oracle_counts = top[0][1]["oracle_counts"]
    total = sum(oracle_counts.values()) or 1.0
    ids = sorted(oracle_counts, key=lambda i: (-max([oracle_counts[i]] + [
        c["selection_counts"].get(i, 0) for _, c in top]), i))[:MAX_EXPERIENCES_SHOWN]
    series = [(e.display_name, [c["selection_counts"].get(i, 0) / total for i in ids])
              for e, c in top]
    return {"experiences": ids, "series": series,
            "oracle": [oracle_counts[i] / total for i in ids],
            "shown_of": len(oracle_counts)}


def _markers(view: SettingView) -> list[site_figures.Marker]:
    if view.metric != standings.RANK_BY_ADVANTAGE:
        return [site_figures.Marker(line.rule, f"{line.label.split(' (')[0]}",
                                    line.success.value)
                for line in view.references if line.success.value is not None]
    return [site_figures.Marker(line.rule, line.label.split(" (")[0], line.advantage)
            for line in view.references if line.advantage is not None]


def _setting_figures(view: SettingView) -> dict:
    """The setting page's plots: A (or success) with intervals, and the top rows' selections."""
    metric = view.metric
    rows = []
    for entry, standing in view.ranked:
        estimate = standing.advantage if metric == standings.RANK_BY_ADVANTAGE else standing.success
        rows.append(site_figures.IntervalRow(entry.display_name, estimate.value, estimate.low,
                                             estimate.high, standing.matters))
    name = "A" if metric == standings.RANK_BY_ADVANTAGE else "success"
    figures: dict = {"ranking": None, "selection": None, "selection_note": ""}
    if rows:
        figures["ranking"] = site_figures.interval_figure(
            rows, _markers(view), f"{name} of every ranked row with its 95% interval", name)
    shares = _selection_shares(view)
    if shares is not None:
        figures["selection"] = site_figures.selection_figure(
            shares["experiences"], shares["series"], shares["oracle"],
            "Share of scenes per experience: the top rows against the oracle")
        figures["selection_note"] = (
            f"{len(shares['experiences'])} most chosen of {shares['shown_of']} experiences shown"
            if len(shares["experiences"]) < shares["shown_of"] else "")
    return figures


def _setting_files(view: SettingView, notice: str | None) -> dict[str, bytes]:
    info = view.info
    base = f"settings/{info.setting_id}"
    ranked_rows = [row_json(e, s) for e, s in view.ranked]
    reference_rows = [row_json(e, None) for e in view.reference_entries]
    document = {"schema_version": LEADERBOARD_SCHEMA_VERSION, "setting": info.to_json(),
                "discrimination": view.discrimination.to_json(), "ranked_by": view.metric,
                "reference_lines": [line.to_json() for line in view.references],
                "columns": [{"key": c.key, "header": c.header, "explanation": c.explanation}
                            for c in COLUMNS],
                "rows": ranked_rows + reference_rows,
                "best_per_submitter": view.best_per_submitter}
    html = _render("setting.html", view=view, setting=info, columns=COLUMNS,
                   rows=[ranked_view(e, s, view.metric) for e, s in view.ranked],
                   best=set(view.best_per_submitter),
                   figures=_setting_figures(view), notice=notice)
    return {f"{base}.html": html, f"{base}.json": _json_bytes(document)}


def _summary_figure(summary: CrossSetting) -> str | None:
    if not summary.rules or not summary.settings:
        return None
    cells = {}
    for (key, setting), cell in summary.cells.items():
        interval = cell["interval"] or {}
        cells[(key, setting)] = site_figures.GridCell(
            cell["value"], interval.get("low"), interval.get("high"),
            (summary.best_fixed.get(setting) or {}).get("advantage"), cell["matters"])
    names = dict(summary.rules)
    relabelled = {(names[k], s): c for (k, s), c in cells.items()}
    return site_figures.summary_figure(
        [names[k] for k, _ in summary.rules], summary.settings, relabelled,
        "A of every rule on every setting that discriminates, with 95% intervals")


def _papers() -> dict:
    return {key: {**paper, "url": f"https://arxiv.org/abs/{paper['arxiv']}"}
            for key, paper in PAPERS.items()}


def _links(published: Mapping[str, str]) -> dict[str, str | None]:
    """Site-root-relative links the index shows; None where that document is not published."""
    def doc(source: str) -> str | None:
        return published.get(source)

    return {**API_LINKS, "docs": DOCS_INDEX if published else None,
            "metrics": doc("docs/metrics.md"), "leaderboard": doc("docs/leaderboard.md"),
            "selector_protocol": doc("docs/selector_protocol.md"), "api_doc": doc("docs/api.md"),
            "self_hosting": doc("docs/self_hosting.md"), "dataset": doc(DATASET_CARD),
            "croissant": doc(CROISSANT)}


def _document_files(documents: Documents, notice: str | None) -> dict[str, bytes]:
    """The documents' pages, the list of them, and the files published as they are."""
    files: dict[str, bytes] = {}
    listed = []
    for doc in render_markdown(documents):
        root = "../" * doc.path.count("/")
        files[doc.path] = _render("doc.html", doc=doc, root=root, notice=notice)
        listed.append({"title": doc.title, "source": doc.source,
                       "link": "../" + doc.path if not doc.path.startswith("docs/")
                       else doc.path[len("docs/"):]})
    for source, body in documents.files.items():
        files[site_path(source)] = bytes(body)
    if listed:
        files[DOCS_INDEX] = _render("docs_index.html", docs=listed, notice=notice)
    return files


def _index_files(views: Sequence[SettingView], notice: str | None,
                 links: Mapping[str, str | None], public_url: str | None,
                 readout: Sequence[dict] = ()) -> dict[str, bytes]:
    summaries = [setting_summary(view) for view in views]  # the caller's order
    summary = cross_setting(views)
    document = {"schema_version": LEADERBOARD_SCHEMA_VERSION, "settings": summaries,
                "cross_setting": summary.to_json(), "notice": notice,
                "readout_settings": list(readout)}
    html = _render("index.html", settings=summaries, summary=summary, readout=list(readout),
                   summary_figure=_summary_figure(summary),
                   explainer=site_figures.explainer_figure(), notice=notice, links=links,
                   papers=_papers(), public_url=public_url)
    return {"index.html": html, "index.json": _json_bytes(document)}


def _report_files(entry: LeaderboardEntry, info: SettingInfo,
                  standing: standings.Standing | None, notice: str | None) -> dict[str, bytes]:
    base = f"reports/{entry.submission_id}"
    context = ReportContext(
        title=f"{entry.display_name} on {info.setting_id}", setting_id=info.setting_id,
        rule=entry.display_name,
        submitter=("the benchmark (reference rule)" if entry.kind == "baseline"
                   else entry.submitter or "not given"),
        date=entry.submitted_at[:10] or None, kind=entry.kind,
        setting_link=f"../settings/{info.setting_id}.html", index_link="../index.html",
        json_link=f"{entry.submission_id}.json",
        standing=None if standing is None else standing.to_json(), notice=notice)
    return {f"{base}.html": render_report_html(entry.report, context).encode("utf-8"),
            f"{base}.json": _json_bytes(entry.report)}


def build_leaderboard(entries: Sequence[LeaderboardEntry], settings: Sequence[SettingInfo],
                      *, thumbnails: Mapping[str, bytes] | None = None,
                      notice: str | None = None, documents: Documents | None = None,
                      public_url: str | None = None,
                      readout_settings: Sequence[ReadoutSettingInfo] = (),
                      readout_entries: Sequence[ReadoutEntry] = ()) -> dict[str, bytes]:
    """Render the whole public leaderboard as static files.

    Args:
        entries: every published row (submissions and reference rules), each
            with its audit report or its `not_computed` reason; submission ids
            must be unique. Rows not computed are not published.
        settings: every setting to list, including those without rows yet.
        thumbnails: setting id -> PNG bytes of one of its query scenes, shown
            on the index (written as ``thumbs/<setting_id>.png``).
        notice: one sentence shown at the top of every page (for example that
            the reference reports are still being computed).
        documents: the documents published with the site (the publisher passes
            `leaderboard.site.documents.read_documents()`: docs/*.md, the README,
            the dataset card and its Croissant record); None publishes none, and
            the index names them as paths in the source instead of linking them.
        public_url: the server's public address, shown in the submit block
            (None: the page shows the address it was loaded from).
        readout_settings: the readout settings (docs/readout.md), each with its reference
            report; their pages are `leaderboard.site.readout_pages`.
        readout_entries: the public readout submissions' rows.

    Returns:
        A mapping from a relative path (``index.html``,
        ``settings/<id>.json``, ``reports/<id>.html``, ...) to the file's
        bytes. The same inputs give the same bytes, in whatever order the
        entries come; settings are listed in the order given.

    Raises:
        BrokenContract: an entry names an unknown setting, an id is used twice, or
            a report holds NaN/infinity (the message names the field).
    """
    groups = _group(entries, settings)
    thumbnails = dict(thumbnails or {})
    unknown = sorted(set(thumbnails) - set(groups))
    if unknown:
        raise BrokenContract(f"thumbnails: setting_id {unknown[0]!r} is not among the settings")
    views = [setting_view(info, groups[info.setting_id],
                          f"thumbs/{info.setting_id}.png" if info.setting_id in thumbnails
                          else None) for info in settings]
    documents = documents or Documents()
    published = {source: site_path(source) for source in [*documents.markdown, *documents.files]}
    files = _document_files(documents, notice)
    files.update(_index_files(views, notice, _links(published), public_url,
                              readout_cards(readout_settings, readout_entries)))
    files.update(readout_files(readout_settings, readout_entries, notice))
    for view in views:
        files.update(_setting_files(view, notice))
        by_row = {e.submission_id: s for e, s in view.ranked}
        for entry in groups[view.info.setting_id]:
            files.update(_report_files(entry, view.info, by_row.get(entry.submission_id), notice))
    for setting_id, png in thumbnails.items():
        files[f"thumbs/{setting_id}.png"] = bytes(png)
    return dict(sorted(files.items()))
