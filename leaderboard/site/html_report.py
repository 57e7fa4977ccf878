"""`render_report_html`: one self-contained page for an audit report dict.

Inline SVG and inline CSS only: the page opens offline and can be attached to
a paper's supplement. Every user-supplied string is escaped. A section whose
numbers the report does not carry (a sealed setting's report holds only its
headline numbers) is left out with one sentence saying so, never drawn from
zeros. With a `ReportContext` (the published leaderboard) the page names its
setting, rule, submitter and date and links back to the board.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from leaderboard.site import svg
from leaderboard.site.figures import IntervalRow, Marker, interval_figure
from leaderboard.site.sealed_html import is_sealed_report, render_sealed_html

SHORT_CELL = 16
"""Numeric cells up to this many characters never wrap (a number is not broken mid-digit)."""

MAX_BARS = 25
"""Experiences drawn in the selection histogram (most selected by rule or oracle)."""

PAGE_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222;line-height:1.45;overflow-wrap:anywhere}
h1{font-size:1.4rem;margin:.3rem 0}h2{font-size:1.15rem;margin-top:1.6rem}
nav a{margin-right:1rem}
a{color:#0b57a4}
.table-wrap{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}
td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.nw{white-space:nowrap;overflow-wrap:normal}
.verdict{font-size:1.1em;padding:.6em;background:#eef3f9;border-left:4px solid #0b57a4}
.note{color:#444;font-size:.92em}
.notice{background:#fff4ce;border:1px solid #e0c060;padding:.5rem .75rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:.5rem 0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.mark-yes{color:#1a7f37;font-weight:600}.mark-no{color:#6e4b00;font-weight:600}
svg{max-width:100%;height:auto}
@media (max-width:40rem){dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.3rem}}
"""
"""Shared by the report pages (offline and published)."""

MISSING = "This report does not carry these numbers (a sealed setting publishes only its headline numbers)."


@dataclass(frozen=True)
class ReportContext:
    """Where a published report sits: its setting, rule, submitter, date and links.

    Attributes:
        title: the page title (rule on setting).
        setting_id, rule, submitter, date, kind: shown in the page's header.
        setting_link, index_link, json_link: relative links back and to the JSON.
        standing: the row's standing on its setting (`Standing.to_json()`),
            or None for a reference line.
        notice: one sentence shown above everything (e.g. reference rows still
            being computed), or None.
    """

    title: str
    setting_id: str
    rule: str
    submitter: str
    date: str | None
    kind: str
    setting_link: str
    index_link: str
    json_link: str
    standing: dict | None = None
    notice: str | None = None


def _f(value, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(block: dict | None) -> str:
    if not block:
        return "no interval reported"
    if block.get("low") is None:
        return f"no interval: {block.get('reason') or 'not reported'}"
    return f"[{_f(block['low'])}, {_f(block['high'])}]"


def _row(cells: list[str], numeric: tuple[int, ...] = ()) -> str:
    return (
        "<tr>"
        + "".join(
            (f'<td class="n{" nw" if len(c) <= SHORT_CELL else ""}">{escape(c)}</td>'
             if i in numeric else f"<td>{escape(c)}</td>")
            for i, c in enumerate(cells)
        )
        + "</tr>"
    )


def _table(headers: list[str], rows: list[list[str]], numeric: tuple[int, ...] = (1,)) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join(_row(r, numeric) for r in rows)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _missing(title: str) -> str:
    return f"<h2>{escape(title)}</h2><p class=note>{escape(MISSING)}</p>"


def _selection_section(report: dict) -> str:
    conc = report.get("concentration") or {}
    counts, oracle = conc.get("selection_counts"), conc.get("oracle_counts")
    title = "Selection distribution against the oracle"
    if not counts or not oracle:
        return _missing(title)
    experience_ids = (report.get("inputs") or {}).get("experience_ids") or sorted(counts)
    ids = sorted(experience_ids, key=lambda e: -max(counts.get(e, 0), oracle.get(e, 0)))[:MAX_BARS]
    chart = svg.grouped_bars(
        ids,
        [
            ("rule", [float(counts.get(e, 0)) for e in ids], svg.PALETTE["rule"]),
            ("oracle (ties split)", [float(oracle.get(e, 0)) for e in ids], svg.PALETTE["oracle"]),
        ],
        title="Selection counts of the rule against the oracle",
        y_label="scenes",
    )
    shown = "" if len(ids) == len(counts) else f" ({len(ids)} most selected of {len(counts)} shown)"
    return (
        f"<h2>{title}</h2><p class=note>Counts of scenes per experience{escape(shown)}."
        f" Top pick {escape(str(conc.get('top_pick')))}: share {_f(conc.get('top_pick_share'))} against the oracle's"
        f" {_f(conc.get('oracle_top_pick_share'))}, concentration ratio {_f(conc.get('concentration_ratio'))}.</p>{chart}"
    )


def _advantage_text(ref: dict) -> str:
    if ref.get("advantage") is not None:
        return _f(ref["advantage"], True)
    return f"n/a ({ref.get('advantage_reason') or 'not reported'})"


def _reference_section(report: dict) -> str:
    ref, iv = report.get("reference") or {}, report.get("intervals") or {}
    if not ref:
        return _missing("Reference quantities")
    rows = [
        ["success of the rule", _f(ref.get("success_rule")), _interval(iv.get("success_rule"))],
        ["success of random", _f(ref.get("success_random")), ""],
        ["success of the oracle", _f(ref.get("success_oracle")), ""],
        [f"success of best-fixed ({ref.get('best_fixed') or 'n/a'})", _f(ref.get("success_best_fixed")),
         _interval(iv.get("success_best_fixed"))],
        ["headroom (oracle - best-fixed)", _f(ref.get("headroom")), ""],
        ["advantage A", _advantage_text(ref), _interval(iv.get("advantage"))],
        ["A of best-fixed", _f(ref.get("best_fixed_advantage"), True), ""],
    ]
    chart = _advantage_chart(ref, iv.get("advantage"))
    return ("<h2>Reference quantities</h2>"
            + _table(["quantity", "value", "95% interval (bootstrap over states)"], rows) + chart)


def _advantage_chart(ref: dict, interval: dict | None) -> str:
    """The rule's A against random (0), best-fixed and the oracle (1)."""
    if ref.get("advantage") is None:
        return ""
    low = (interval or {}).get("low")
    high = (interval or {}).get("high")
    beats = ref.get("success_rule") is not None and ref.get("success_best_fixed") is not None \
        and ref["success_rule"] > ref["success_best_fixed"]
    markers = [Marker("random", "random", 0.0), Marker("oracle", "oracle", 1.0)]
    if ref.get("best_fixed_advantage") is not None:
        markers.insert(1, Marker("best_fixed", "best-fixed", ref["best_fixed_advantage"]))
    return interval_figure([IntervalRow("this rule", ref["advantage"], low, high, beats)], markers,
                           "A of the rule with its 95% interval against the reference lines", "A")


def _gap_section(report: dict) -> str:
    gaps = report.get("gap") or {}
    if not gaps.get("all"):
        return _missing("Discrimination gap")
    rows = []
    for name in ("all", "appearance", "layout"):
        block = gaps.get(name)
        if not block:
            continue
        low, high = block.get("gap_envelope") or (None, None)
        rows.append(
            (f"{name} (n={block.get('n_scenes')})", block.get("gap"), low, high,
             bool(block.get("gap_significant")))
        )
    chart = svg.interval_rows(
        rows, title="Discrimination gap against the envelope of frequency-matched shuffles"
    )
    interval = _interval((report.get("intervals") or {}).get("gap"))
    reason = gaps["all"].get("reason")
    extra = f" Not computed: {escape(reason)}." if reason and gaps["all"].get("gap") is None else ""
    return (
        "<h2>Discrimination gap</h2><p class=note>Rule success minus the mean of shuffles that keep its "
        "selection counts; band = 95% envelope of the shuffles; red = outside the envelope. "
        f"Gap interval over states: {escape(interval)}.{extra}</p>{chart}"
    )


def _ranking_section(report: dict) -> str:
    rank = report.get("ranking") or {}
    if not rank:
        return _missing("Prediction versus ranking")
    chart = svg.value_bars(
        ["pooled AUROC", "within-query AUROC"],
        [rank.get("pooled_auroc"), rank.get("within_query_auroc")],
        title="Pooled versus within-query AUROC",
        reference=0.5,
    )
    if rank.get("not_computable_reason"):
        note = f"Not computable: {rank['not_computable_reason']}."
    else:
        note = (
            f"Within-query AUROC over {_f(rank.get('within_query_eligible_share'))} of scenes (eligible), "
            f"interval {_interval((report.get('intervals') or {}).get('within_query_auroc'))}. Dashed line: chance."
        )
    return (
        f"<h2>Prediction versus ranking</h2><p class=note>{escape(note)} r2_scene = {_f(rank.get('r2_scene'))} "
        f"(share of outcome variance explained by scene difficulty).</p>{chart}"
    )


def _id_list(ids: list[str] | None) -> str:
    return f" ({', '.join(ids)})" if ids else ""


def _diagnostics_section(report: dict) -> str:
    diag = report.get("diagnostics") or {}
    if not diag:
        return _missing("Diagnostics")

    def adv(block: dict | None) -> str:
        block = block or {}
        if block.get("advantage") is not None:
            return _f(block["advantage"], True)
        return f"n/a ({block.get('reason') or 'not reported'})"

    subs = diag.get("random_sublibraries") or {}
    sub_text = _f(subs.get("share_exceeding_oracle")) if subs.get("reason") is None else subs["reason"]
    rerank = diag.get("reranking") or {}
    rows = [
        [f"delete top pick ({(diag.get('delete_top_pick') or {}).get('removed')})",
         adv(diag.get("delete_top_pick"))],
        ["equalized library" + _id_list((diag.get("equalized_library") or {}).get("experience_ids")),
         adv(diag.get("equalized_library"))],
        ["CSLS re-ranking", adv(rerank.get("csls"))],
        ["mutual proximity re-ranking", adv(rerank.get("mutual_proximity"))],
        [f"random K={subs.get('size')} sub-libraries: share above the oracle's concentration", sub_text],
    ]
    return (
        "<h2>Diagnostics</h2><p class=note>These use the outcome labels: they locate a failure, "
        "they are not methods.</p>" + _table(["diagnostic", "advantage"], rows)
    )


def _mark(flag, yes: str, no: str) -> str:
    if flag is None:
        return '<span>n/a</span>'
    return f'<span class="mark-yes">{escape(yes)}</span>' if flag else f'<span class="mark-no">{escape(no)}</span>'


def _context_header(context: ReportContext, heading: bool = True) -> str:
    nav = (f'<nav aria-label="back"><a href="{escape(context.setting_link)}">&larr; {escape(context.setting_id)}</a>'
           f'<a href="{escape(context.index_link)}">all settings</a>'
           f'<a href="{escape(context.json_link)}">report JSON</a></nav>')
    facts = [("setting", f'<a href="{escape(context.setting_link)}">{escape(context.setting_id)}</a>'),
             ("rule", escape(context.rule)),
             ("submitted by", escape(context.submitter)),
             ("date", escape(context.date or "n/a"))]
    standing = context.standing
    if standing is not None:
        rank = standing.get("rank")
        facts.append(("rank", "n/a" if rank is None else f"{rank} (CI-aware: 1 + rows whose interval lies wholly above)"))
        distance = standing.get("best_fixed_distance")
        facts.append(("beats best-fixed", _mark(standing.get("beats_best_fixed"), "yes", "no")
                      + ("" if distance is None else f" ({distance:+.3f} in success)")))
        facts.append(("beats its shuffle envelope",
                      _mark(standing.get("beats_shuffle"), "yes: gap above the envelope",
                            "no: gap not above the envelope")))
    elif context.kind == "baseline":
        facts.append(("role", "reference line (hindsight), not a competitor"))
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    notice = f'<p class="notice" role="status">{escape(context.notice)}</p>' if context.notice else ""
    title = f"<h1>{escape(context.title)}</h1>" if heading else ""
    return f"{nav}{notice}{title}<dl class=\"facts\">{body}</dl>"


def render_report_html(report: dict, context: ReportContext | None = None) -> str:
    """A complete HTML page for a report dict (from `AuditReport.to_dict`).

    Args:
        report: the audit report; sections it lacks are said to be missing.
        context: where the report is published (setting, rule, submitter,
            date, links); None for an offline report.
    """
    if is_sealed_report(report):
        page = render_sealed_html(report)
        if context is None:
            return page
        return page.replace("<main>", "<main>" + _context_header(context, heading=False), 1)
    inputs = report.get("inputs") or {}
    verdict = report.get("verdict") or {}
    if inputs:
        head = (
            f"{inputs.get('n_experiences')} experiences x {inputs.get('n_scenes')} scenes x "
            f"{inputs.get('n_seeds')} seeds, seed {inputs.get('seed')}, {inputs.get('n_shuffles')} shuffles, "
            f"{inputs.get('n_bootstrap')} bootstrap resamples"
            + (", selection-only input" if inputs.get("selection_only") else "")
        )
    else:
        head = "inputs not reported"
    sections = [
        _reference_section(report),
        _selection_section(report),
        _gap_section(report),
        _ranking_section(report),
        _diagnostics_section(report),
    ]
    title = f"{context.title} · expaudit" if context else "Retrieval audit · expaudit"
    header = _context_header(context) if context else "<h1>Retrieval audit</h1>"
    label = verdict.get("label") or "no verdict"
    text = verdict.get("text") or "the report carries no verdict"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{PAGE_CSS}</style></head><body><main>{header}"
        f'<p class="verdict"><strong>{escape(label)}</strong>: {escape(text)}</p>'
        f"<p class=note>{escape(head)} (report schema {escape(str(report.get('schema_version', 'n/a')))})</p>"
        + "".join(sections)
        + "</main></body></html>\n"
    )
