"""`render_report_html`: one self-contained page for an audit report dict.

Inline SVG and inline CSS only: the page opens offline and can be attached to
a paper's supplement. Every user-supplied string is escaped.
"""

from __future__ import annotations

from html import escape

from leaderboard import svg

MAX_BARS = 25
"""Experiences drawn in the selection histogram (most selected by rule or oracle)."""

_CSS = """
body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:.2em .8em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.verdict{font-size:1.2em;padding:.6em;background:#f3f6fa}
.note{color:#666;font-size:.9em}
"""


def _f(value, signed: bool = False) -> str:
    if value is None:
        return "null"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(block: dict) -> str:
    if block["low"] is None:
        return f"no interval: {block['reason']}"
    return f"[{_f(block['low'])}, {_f(block['high'])}]"


def _row(cells: list[str], numeric: tuple[int, ...] = ()) -> str:
    return (
        "<tr>"
        + "".join(
            f'<td class="n">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
            for i, c in enumerate(cells)
        )
        + "</tr>"
    )


def _selection_section(report: dict) -> str:
    conc = report["concentration"]
    counts, oracle = conc["selection_counts"], conc["oracle_counts"]
    ids = sorted(report["inputs"]["experience_ids"], key=lambda e: -max(counts[e], oracle[e]))[:MAX_BARS]
    chart = svg.grouped_bars(
        ids,
        [
            ("rule", [float(counts[e]) for e in ids], svg.PALETTE["rule"]),
            ("oracle (ties split)", [oracle[e] for e in ids], svg.PALETTE["oracle"]),
        ],
        title="Selection counts of the rule against the oracle",
        y_label="scenes",
    )
    shown = "" if len(ids) == len(counts) else f" ({len(ids)} most selected of {len(counts)} shown)"
    return (
        f"<h2>Selection distribution against the oracle</h2><p class=note>Counts of scenes per experience{escape(shown)}."
        f" Top pick {escape(conc['top_pick'])}: share {_f(conc['top_pick_share'])} against the oracle's"
        f" {_f(conc['oracle_top_pick_share'])}, concentration ratio {_f(conc['concentration_ratio'])}.</p>{chart}"
    )


def _reference_section(report: dict) -> str:
    ref, iv = report["reference"], report["intervals"]
    advantage = (
        _f(ref["advantage"], True) if ref["advantage"] is not None else f"null ({ref['advantage_reason']})"
    )
    rows = [
        ["success_rule", _f(ref["success_rule"]), _interval(iv["success_rule"])],
        ["success_random", _f(ref["success_random"]), ""],
        ["success_oracle", _f(ref["success_oracle"]), ""],
        [
            f"success_best_fixed ({ref['best_fixed']})",
            _f(ref["success_best_fixed"]),
            _interval(iv["success_best_fixed"]),
        ],
        ["headroom (oracle - best fixed)", _f(ref["headroom"]), ""],
        ["advantage A", advantage, _interval(iv["advantage"])],
        ["best_fixed_advantage", _f(ref["best_fixed_advantage"], True), ""],
    ]
    body = "".join(_row(r, (1,)) for r in rows)
    return (
        "<h2>Reference quantities</h2><table><tr><th>quantity</th><th>value</th>"
        f"<th>95% interval (bootstrap over states)</th></tr>{body}</table>"
    )


def _gap_section(report: dict) -> str:
    rows = []
    for name in ("all", "appearance", "layout"):
        block = report["gap"][name]
        low, high = block["gap_envelope"] or (None, None)
        rows.append(
            (f"{name} (n={block['n_scenes']})", block["gap"], low, high, bool(block["gap_significant"]))
        )
    chart = svg.interval_rows(
        rows, title="Discrimination gap against the envelope of frequency-matched shuffles"
    )
    return (
        "<h2>Discrimination gap</h2><p class=note>Rule success minus the mean of shuffles that keep its "
        "selection counts; band = 95% envelope of the shuffles; red = outside the envelope. "
        f"Gap interval over states: {escape(_interval(report['intervals']['gap']))}.</p>{chart}"
    )


def _ranking_section(report: dict) -> str:
    rank = report["ranking"]
    chart = svg.value_bars(
        ["pooled AUROC", "within-query AUROC"],
        [rank["pooled_auroc"], rank["within_query_auroc"]],
        title="Pooled versus within-query AUROC",
        reference=0.5,
    )
    if rank["not_computable_reason"]:
        note = f"Not computable: {rank['not_computable_reason']}."
    else:
        note = (
            f"Within-query AUROC over {_f(rank['within_query_eligible_share'])} of scenes (eligible), "
            f"interval {_interval(report['intervals']['within_query_auroc'])}. Dashed line: chance."
        )
    return (
        f"<h2>Prediction versus ranking</h2><p class=note>{escape(note)} r2_scene = {_f(rank['r2_scene'])} "
        f"(share of outcome variance explained by scene difficulty).</p>{chart}"
    )


def _id_list(ids: list[str] | None) -> str:
    return f" ({', '.join(ids)})" if ids else ""


def _diagnostics_section(report: dict) -> str:
    diag = report["diagnostics"]

    def adv(block: dict) -> str:
        return _f(block["advantage"], True) if block["advantage"] is not None else f"null ({block['reason']})"

    subs = diag["random_sublibraries"]
    sub_text = _f(subs["share_exceeding_oracle"]) if subs["reason"] is None else subs["reason"]
    rows = [
        [f"delete top pick ({diag['delete_top_pick']['removed']})", adv(diag["delete_top_pick"])],
        [
            "equalized library" + _id_list(diag["equalized_library"]["experience_ids"]),
            adv(diag["equalized_library"]),
        ],
        ["CSLS re-ranking", adv(diag["reranking"]["csls"])],
        ["mutual proximity re-ranking", adv(diag["reranking"]["mutual_proximity"])],
        [f"random K={subs['size']} sub-libraries: share above the oracle's concentration", sub_text],
    ]
    body = "".join(_row(r, (1,)) for r in rows)
    return (
        "<h2>Diagnostics</h2><p class=note>These use the outcome labels: they locate a failure, "
        f"they are not methods.</p><table><tr><th>diagnostic</th><th>advantage</th></tr>{body}</table>"
    )


def render_report_html(report: dict) -> str:
    """A complete HTML page for a report dict (from `AuditReport.to_dict`)."""
    inputs, verdict = report["inputs"], report["verdict"]
    head = (
        f"{inputs['n_experiences']} experiences x {inputs['n_scenes']} scenes x {inputs['n_seeds']} seeds, "
        f"seed {inputs['seed']}, {inputs['n_shuffles']} shuffles, {inputs['n_bootstrap']} bootstrap resamples"
        + (", selection-only input" if inputs["selection_only"] else "")
    )
    sections = [
        _selection_section(report),
        _reference_section(report),
        _gap_section(report),
        _ranking_section(report),
        _diagnostics_section(report),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Retrieval audit</title>'
        f"<style>{_CSS}</style></head><body><h1>Retrieval audit</h1><p class=note>{escape(head)} "
        f"(report schema {escape(str(report['schema_version']))})</p>"
        f'<p class="verdict"><strong>{escape(verdict["label"])}</strong>: {escape(verdict["text"])}</p>'
        + "".join(sections)
        + "</body></html>\n"
    )
