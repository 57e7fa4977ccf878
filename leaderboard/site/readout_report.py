"""`render_readout_html`: one self-contained page for a readout report dict; and
`render_readout_summary`, its few lines for a terminal.

Inline SVG and CSS only, every user string escaped, the retrieval report's page style (it
fits a phone). A number the report leaves null is shown as "n/a" with its reason, never as 0.
Beside gain and context sensitivity the page says that a constant readout has both at 0.
"""

from __future__ import annotations

from html import escape

from leaderboard.site.html_report import PAGE_CSS
from leaderboard.site.readout_figures import RepresentationPoint, accuracy_gain_figure, response_figure

METRIC_LABELS = {
    "mae_natural": "natural MAE",
    "mae_controlled": "controlled MAE",
    "gain": "endpoint gain",
    "gain_error": "gain error",
    "context_sensitivity": "context sensitivity",
    "slope": "all-cell slope",
}
CONSTANT_BESIDE = "a constant readout also scores 0 here"
"""Said next to gain and context sensitivity (READOUT_SPEC: pages say so next to both)."""
BESIDE = {"gain": CONSTANT_BESIDE, "context_sensitivity": CONSTANT_BESIDE,
          "gain_error": "over- and under-response do not cancel"}


EXTRA_CSS = "th,td.n{overflow-wrap:normal}h3{font-size:1rem}details{margin:.5rem 0}section{margin-top:2rem}"
"""Headers and numbers are not broken mid-word (the shared page style breaks long ids anywhere)."""


def _f(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def _interval(block: dict) -> str:
    if block.get("low") is None:
        return f"no interval ({block.get('interval_reason') or block.get('reason') or 'not reported'})"
    return f"[{_f(block['low'])}, {_f(block['high'])}]"


def _table(headers: list[str], rows: list[list[str]], numeric: tuple[int, ...] = ()) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _not_estimable(block: dict) -> str:
    skipped = block.get("not_estimable") or {}
    if not skipped:
        return ""
    return "; ".join(f"{count}: {reason}" for reason, count in skipped.items())


def _summary_section(rep: dict, unit: str) -> str:
    rows = []
    for name, label in METRIC_LABELS.items():
        block = (rep.get("summary") or {}).get(name) or {}
        mean = _f(block.get("mean")) if block.get("mean") is not None else f"n/a ({block.get('reason')})"
        rows.append([label, mean, _interval(block), str(block.get("n", 0)), _not_estimable(block),
                     BESIDE.get(name, "")])
    constant = rep.get("constant_readout") or {}
    flagged = constant.get("initializations") or []
    note = (f'<p class="notice">Constant readout on {len(flagged)} initialization(s) '
            f"({escape(', '.join(flagged))}): {escape(constant.get('note') or '')}.</p>" if flagged else "")
    readout = rep.get("readout") or {}
    described = (f"ridge readout, lambda {readout.get('lambda')}, fitted on {readout.get('n_train')} train natural "
                 f"observations, {readout.get('n_features')} features ({readout.get('n_constant_features')} constant "
                 "on train, left out)" if readout.get("kind") == "ridge" else "submitted predictions")
    return (f"<h3>Summary over initializations</h3><p class=note>{escape(described)}. Means over the "
            f"initializations where a metric is estimable, 95% initialization-bootstrap intervals; MAE, "
            f"sensitivity in {escape(unit)}.</p>{note}"
            + _table(["metric", "mean", "95% interval", "n", "not estimable", "note"], rows, (1, 3))
            + _by_source_section(rep, unit))


def _by_source_section(rep: dict, unit: str) -> str:
    """Natural MAE of the same readout on each source's frames (a bank with several sources)."""
    by = rep.get("natural_mae_by_source") or {}
    if not by:
        return ""
    rows = [[source, _f(block.get("mean")), _interval(block), str(block.get("n", 0))]
            for source, block in by.items()]
    return (f"<h3>Natural MAE by source of the frames</h3><p class=note>The same readout on the frames of "
            f"each source alone (the expert, each published policy), in {escape(unit)}.</p>"
            + _table(["source", "mean", "95% interval", "n"], rows, (1, 3)))


def _curves_section(rep: dict, unit: str) -> str:
    curves = rep.get("curves") or []
    if not curves:
        return "<p class=note>No initialization with admitted controlled cells to draw.</p>"
    figures = "".join(
        response_figure(c, unit, f"{rep['name']}: prediction against actual coordinate per context, "
                                 f"initialization {c['initialization']}") for c in curves)
    return ("<h3>Prediction against coordinate per context</h3><p class=note>One line per robot context; "
            "the dashed line is a readout that follows the coordinate exactly. Flat lines: weak response; "
            f"lines apart: context sensitivity.</p>{figures}")


def _initialization_rows(rep: dict) -> str:
    rows = []
    for m in rep.get("initializations") or []:
        cells = [m["initialization"]]
        for name in METRIC_LABELS:
            value = m[name]["value"]
            cells.append(_f(value) if value is not None else "n/a")
        reason = next((m[n]["reason"] for n in METRIC_LABELS if m[n]["reason"]), "")
        cells.append(("constant readout; " if m.get("constant_readout") else "") + (reason or ""))
        rows.append(cells)
    return ("<details><summary>Per initialization</summary>"
            + _table(["initialization"] + list(METRIC_LABELS.values()) + ["not estimable / note"], rows,
                     tuple(range(1, 7))) + "</details>")


def _failure_section(rep: dict) -> str:
    block = rep.get("failure_prediction") or {}
    if block.get("reason"):
        return f"<h3>Failure prediction</h3><p class=note>Not computed: {escape(block['reason'])}.</p>"
    out = ["<h3>Failure prediction</h3><p class=note>Logistic models fitted on dev, scored on the evaluation "
           "initializations; differences are first minus second (negative favours the first), intervals "
           "resample evaluation initializations. Failure prediction, not a claim that the diagnostics "
           "improve success.</p>"]
    for policy, result in (block.get("policies") or {}).items():
        if result.get("reason"):
            out.append(f"<p>{escape(policy)}: not computed: {escape(result['reason'])}.</p>")
            continue
        models = [[name, _f(m.get("brier")), _f(m.get("log_loss")), ", ".join(m.get("covariates", []))]
                  for name, m in result["models"].items()]
        diffs = [[d["comparison"], d["loss"], _f(d["mean"], 4),
                  "n/a" if d["low"] is None else f"[{_f(d['low'], 4)}, {_f(d['high'], 4)}]"]
                 for d in result["differences"]]
        out.append(f"<p>Policy {escape(policy)}: {result['n_dev_rows']} dev runs, {result['n_eval_rows']} evaluation "
                   f"runs on {result['n_eval_initializations']} initializations.</p>"
                   + _table(["model", "Brier", "log loss", "covariates"], models, (1, 2))
                   + _table(["comparison", "loss", "mean difference", "95% interval"], diffs, (2,)))
    return "".join(out)


def _representation_of(test_id: str, task_prefix: str) -> str:
    """The representation part of a test id `task/representation/hypothesis` (it may hold '/')."""
    inner = test_id[len(task_prefix):] if test_id.startswith(task_prefix) else test_id
    return inner.rsplit("/", 1)[0]


def _tests_section(report: dict) -> str:
    tests = report.get("primary_tests") or {}
    task = f"{(report.get('bank') or {}).get('task')}/"
    rows = [[_representation_of(t["test_id"], task), t["hypothesis"], f"{t['n_positive']} / {t['n_positive'] + t['n_negative']}",
             str(t["n_ties"]), str(t["n_not_estimable"]), _p(t["p_value"]),
             _p(t["p_holm"]) if t["p_value"] is not None else f"n/a ({t.get('reason')})"]
            for t in tests.get("tests") or []]
    status = ("confirmatory (confirm initializations)" if tests.get("confirmatory")
              else "not confirmatory: these initializations are not the confirm split")
    size = tests.get("family_size") or len(tests.get("family") or rows)
    family = (f"the {size} tests of this report" if size == len(rows)
              else f"a family of {size} tests ({tests.get('family_scope') or 'published together'}), "
                   f"{len(rows)} of them in this report")
    return ("<h2>Primary tests</h2><p class=note>One-sided exact sign tests over initializations, ties "
            f"dropped; Holm-adjusted over {escape(family)}; {escape(status)}.</p>"
            + _table(["representation", "hypothesis", "in direction / non-tied", "ties", "not estimable", "p", "p (Holm)"],
                     rows, (2, 3, 4, 5, 6)))


def _differences_section(report: dict) -> str:
    pairs = report.get("paired_differences") or []
    if not pairs:
        return ""
    rows = []
    for pair in pairs:
        for name, block in pair["metrics"].items():
            rows.append([f"{pair['first']} - {pair['second']}", METRIC_LABELS.get(name, name),
                         _f(block.get("mean")), _interval(block), str(block.get("n", 0))])
    return ("<h2>Paired differences</h2><p class=note>Per-initialization differences on the initializations "
            "both representations can be measured on, with 95% initialization-bootstrap intervals.</p>"
            + _table(["pair", "metric", "mean difference", "95% interval", "n"], rows, (2, 4)))


def _points(report: dict) -> list[RepresentationPoint]:
    out = []
    for rep in report.get("representations") or []:
        mae, gain = rep["summary"]["mae_natural"], rep["summary"]["gain"]
        out.append(RepresentationPoint(rep["name"], mae.get("mean"), mae.get("low"), mae.get("high"),
                                       gain.get("mean"), gain.get("low"), gain.get("high")))
    return out


def render_readout_html(report: dict) -> str:
    """A complete HTML page for a readout report dict (`run_readout_audit`)."""
    bank, inputs = report.get("bank") or {}, report.get("inputs") or {}
    unit = bank.get("unit", "")
    head = (f"Task {bank.get('task')} ({bank.get('coordinate')}, {unit}), bank {bank.get('version')}; split "
            f"{inputs.get('split')}, {inputs.get('n_initializations')} initializations; {inputs.get('n_bootstrap')} "
            f"bootstrap resamples, seed {inputs.get('seed')}; minimum endpoint separation "
            f"{bank.get('min_separation')} {unit} (report schema {report.get('schema_version')})")
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.get("notes") or [])
    scatter = accuracy_gain_figure(_points(report), unit, "Natural MAE against endpoint gain, per representation")
    reps = "".join(
        f"<section><h2>{escape(rep['name'])}</h2>{_summary_section(rep, unit)}{_curves_section(rep, unit)}"
        f"{_initialization_rows(rep)}{_failure_section(rep)}</section>"
        for rep in report.get("representations") or [])
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Readout audit · {escape(str(bank.get('task')))} · expaudit</title><style>{PAGE_CSS}</style>"
        f"<style>{EXTRA_CSS}</style></head><body><main><h1>Readout audit</h1><p class=note>{escape(head)}</p><ul>{notes}</ul>"
        "<h2>Natural accuracy against responsiveness</h2><p class=note>Each point is a representation's mean "
        "over initializations with 95% intervals; the dashed line is gain 1 (the prediction moves as much as "
        f"the coordinate). A constant readout sits at gain 0.</p>{scatter}"
        + _tests_section(report) + reps + _differences_section(report) + "</main></body></html>\n"
    )


def render_readout_summary(report: dict) -> str:
    """A few lines for a terminal: each representation's headline numbers and its tests."""
    lines = []
    unit = (report.get("bank") or {}).get("unit", "")
    for rep in report.get("representations") or []:
        s = rep["summary"]
        lines.append(f"{rep['name']}: natural MAE {_f(s['mae_natural']['mean'])} {unit}, controlled MAE "
                     f"{_f(s['mae_controlled']['mean'])} {unit}, gain {_f(s['gain']['mean'])}, gain error "
                     f"{_f(s['gain_error']['mean'])}, context sensitivity {_f(s['context_sensitivity']['mean'])} {unit}")
    for t in (report.get("primary_tests") or {}).get("tests") or []:
        lines.append(f"  {t['test_id']} ({t['hypothesis']}): {t['n_positive']} of "
                     f"{t['n_positive'] + t['n_negative']}, p = {_p(t['p_value'])}, Holm {_p(t['p_holm'])}")
    return "\n".join(lines) + "\n"
