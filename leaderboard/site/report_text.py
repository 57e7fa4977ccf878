"""A plain-text summary of a report dict, for the terminal.

It leads with the two cheap reports any study can give (paper, "Conclusion"):
the selection distribution against the oracle's, and best-fixed.
"""

from __future__ import annotations

TOP_ROWS = 10
"""Experiences listed in the selection table (the most selected by the rule)."""


def _f(value, signed: bool = False, digits: int = 3) -> str:
    if value is None:
        return "null"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(block: dict) -> str:
    if block["low"] is None:
        return f"(no interval: {block['reason']})"
    return f"[{_f(block['low'])}, {_f(block['high'])}]"


def _selection(report: dict) -> list[str]:
    conc, ref = report["concentration"], report["reference"]
    counts = conc["selection_counts"]
    order = sorted(report["inputs"]["experience_ids"], key=lambda e: (-counts[e], -conc["oracle_counts"][e]))
    lines = [
        "Selection distribution (rule vs oracle; oracle ties split evenly)",
        f"  {'experience':<20} {'rule':>6} {'oracle':>8} {'quality':>8}",
    ]
    for experience in order[:TOP_ROWS]:
        lines.append(
            f"  {experience:<20} {counts[experience]:>6d} {conc['oracle_counts'][experience]:>8.2f} "
            f"{ref['quality'][experience]:>8.3f}"
        )
    if len(order) > TOP_ROWS:
        lines.append(f"  ... {len(order) - TOP_ROWS} more experiences")
    lines.append(
        f"  top pick {conc['top_pick']}: share {_f(conc['top_pick_share'])} vs oracle "
        f"{_f(conc['oracle_top_pick_share'])}, concentration ratio {_f(conc['concentration_ratio'], digits=2)}, "
        f"quality margin {_f(conc['top_pick_margin'], signed=True)}"
    )
    return lines


def _reference(report: dict) -> list[str]:
    ref, iv = report["reference"], report["intervals"]
    advantage = (
        _f(ref["advantage"], signed=True)
        if ref["advantage"] is not None
        else f"null ({ref['advantage_reason']})"
    )
    return [
        f"Best fixed: {ref['best_fixed']}, success {_f(ref['success_best_fixed'])} "
        f"{_interval(iv['success_best_fixed'])}, advantage {_f(ref['best_fixed_advantage'], signed=True)}",
        "",
        "Reference",
        f"  success_rule        {_f(ref['success_rule'])}  {_interval(iv['success_rule'])}",
        f"  success_random      {_f(ref['success_random'])}",
        f"  success_oracle      {_f(ref['success_oracle'])}",
        f"  headroom            {_f(ref['headroom'])}",
        f"  advantage           {advantage}  {_interval(iv['advantage'])}",
    ]


def _gap(report: dict) -> list[str]:
    lines = [
        "Discrimination gap (frequency-matched shuffles)",
        f"  {'subset':<11} {'scenes':>6} {'gap':>8}  {'95% envelope':<20} significant",
    ]
    for name in ("all", "appearance", "layout"):
        block = report["gap"][name]
        if block["gap"] is None:
            lines.append(f"  {name:<11} {block['n_scenes']:>6d}  not computed: {block['reason']}")
            continue
        low, high = block["gap_envelope"]
        lines.append(
            f"  {name:<11} {block['n_scenes']:>6d} {_f(block['gap'], signed=True):>8}  "
            f"{'[' + _f(low, True) + ', ' + _f(high, True) + ']':<20} {block['direction'] or 'no'}"
        )
    lines.append(f"  gap interval (bootstrap over states): {_interval(report['intervals']['gap'])}")
    return lines


def _ranking(report: dict) -> list[str]:
    rank = report["ranking"]
    lines = ["Prediction versus ranking"]
    if rank["not_computable_reason"]:
        lines.append(f"  AUROC not computable: {rank['not_computable_reason']}")
    else:
        lines.append(f"  pooled AUROC        {_f(rank['pooled_auroc'])}")
        lines.append(
            f"  within-query AUROC  {_f(rank['within_query_auroc'])}  "
            f"{_interval(report['intervals']['within_query_auroc'])}, "
            f"eligible scenes {_f(rank['within_query_eligible_share'], digits=2)}"
        )
    lines.append(f"  r2_scene            {_f(rank['r2_scene'])}")
    return lines


def _adv(block: dict) -> str:
    return (
        _f(block["advantage"], signed=True) if block["advantage"] is not None else f"null ({block['reason']})"
    )


def _diagnostics(report: dict) -> list[str]:
    diag = report["diagnostics"]
    if report["inputs"]["selection_only"]:
        return ["Diagnostics (use labels; not methods)", f"  not computable: {diag['delete_top_pick']['reason']}"]
    subs = diag["random_sublibraries"]
    sub_text = (
        f"{_f(subs['share_exceeding_oracle'], digits=2)} of {subs['n_draws']} K={subs['size']} draws "
        "concentrate more than the oracle"
        if subs["reason"] is None
        else subs["reason"]
    )
    equalized = diag["equalized_library"]
    kept = f" ({', '.join(equalized['experience_ids'])})" if equalized["experience_ids"] else ""
    return [
        "Diagnostics (use labels; not methods)",
        f"  delete top pick {diag['delete_top_pick']['removed']}: advantage {_adv(diag['delete_top_pick'])}",
        f"  equalized library{kept}: advantage {_adv(equalized)}",
        f"  random sub-libraries: {sub_text}",
        f"  re-ranked: CSLS {_adv(diag['reranking']['csls'])}, mutual proximity "
        f"{_adv(diag['reranking']['mutual_proximity'])}",
    ]


def render_summary(report: dict) -> str:
    """The terminal summary of a report dict (as produced by `AuditReport.to_dict`)."""
    inputs = report["inputs"]
    head = (
        f"Audit of {inputs['n_experiences']} experiences x {inputs['n_scenes']} scenes x "
        f"{inputs['n_seeds']} seeds ({inputs['n_states']} states); seed {inputs['seed']}, "
        f"{inputs['n_shuffles']} shuffles, {inputs['n_bootstrap']} bootstrap resamples"
        + (" [selection-only input]" if inputs["selection_only"] else "")
    )
    sections = [
        [head],
        _selection(report),
        _reference(report),
        _gap(report),
        _ranking(report),
        _diagnostics(report),
        [f"Verdict: {report['verdict']['label']}. {report['verdict']['text']}"],
    ]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
