"""The HTML page of a sealed setting's report: the numbers the Ladder released, nothing else.

A sealed report (schema `expaudit-sealed-report/1`, docs/sealed.md) has no
per-experience, per-scene or ranking section, so it gets its own small page
rather than the full report's.
"""

from __future__ import annotations

import html


def is_sealed_report(report: dict) -> bool:
    """True for the report of a submission on a sealed setting."""
    return bool(report.get("sealed"))


def render_sealed_html(report: dict) -> str:
    """A small page for a sealed report: the released numbers and what they mean."""
    ref, rel = report["reference"], report["release"]

    def cell(value) -> str:
        return "not released" if value is None else f"{value:.2f}"

    rows = [("Success of your choices", cell(ref["success_rule"])),
            ("Your best on this setting", cell(rel["best"])),
            ("Random selection", cell(ref["success_random"])),
            ("Oracle selection", cell(ref["success_oracle"])),
            ("Advantage A", "not released" if ref["advantage"] is None else f"{ref['advantage']:.3f}"),
            ("Margin (the Ladder's step)", f"{rel['margin']:.2f}")]
    body = "".join(f"<tr><th scope='row'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)
    setting = html.escape(report["inputs"]["setting_id"])
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Sealed audit: {setting}</title></head><body><main>"
            f"<h1>Sealed audit: {setting}</h1><p>{html.escape(report['verdict']['text'])}</p>"
            f"<table>{body}</table><p>A sealed setting releases only these numbers, through the "
            "Ladder: a score is shown when it beats your best by the margin, rounded to it. "
            "See the sealed-settings documentation.</p></main></body></html>")
