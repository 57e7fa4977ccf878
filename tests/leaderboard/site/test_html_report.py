"""The self-contained HTML report and the SVG helpers behind it."""

import re

import numpy as np
import pytest

from leaderboard.site import svg
from leaderboard.audit import run_audit
from leaderboard.site.html_report import render_report_html


@pytest.fixture
def audit_report_dict(audit_data_factory):
    rng = np.random.default_rng(0)
    outcomes = (rng.random((4, 12, 3)) < 0.5).astype(np.int8)
    ids = ["<script>alert(1)</script>", "plain", "a&b", "e3"]
    data = audit_data_factory(outcomes, states=np.repeat(["a", "b", "c", "d"], 3), experience_ids=ids)
    return run_audit(data, rng.normal(size=(4, 12)), n_shuffles=100, n_bootstrap=100).to_dict()


def test_page_is_self_contained_with_the_plots(audit_report_dict):
    page = render_report_html(audit_report_dict)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page
    assert "<link" not in page and "src=" not in page
    assert re.findall(r"https?://[^\"]+", page) == ["http://www.w3.org/2000/svg"] * 4
    assert page.count("<svg") == 4
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    for title in (
        "A of the rule with its 95% interval against the reference lines",
        "Selection counts of the rule against the oracle",
        "Discrimination gap against the envelope of frequency-matched shuffles",
        "Pooled versus within-query AUROC",
    ):
        assert title in page
    assert audit_report_dict["verdict"]["label"] in page
    assert "Reference quantities" in page


def test_user_ids_are_escaped(audit_report_dict):
    page = render_report_html(audit_report_dict)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a&amp;b" in page


def test_selection_only_page_says_not_computable(audit_report_dict):
    report = dict(audit_report_dict)
    report["ranking"] = {
        **report["ranking"],
        "pooled_auroc": None,
        "within_query_auroc": None,
        "not_computable_reason": "selection-only input: no scores",
    }
    page = render_report_html(report)
    assert "Not computable: selection-only input: no scores." in page
    assert page.count(">not computable<") == 2


def test_grouped_bars_scale_to_the_largest_value():
    chart = svg.grouped_bars(["x", "y"], [("rule", [2.0, 4.0], "#000"), ("oracle", [1.0, 0.0], "#111")], "t")
    heights = [float(h) for h in re.findall(r'height="([0-9.]+)" fill="#000"><title>', chart)]
    assert heights[1] == pytest.approx(2 * heights[0], abs=0.1)
    assert "<title>x rule: 2</title>" in chart


def test_interval_rows_mark_highlights_and_missing_points():
    chart = svg.interval_rows([("a", 0.1, -0.05, 0.05, True), ("b", None, None, None, False)], "t")
    assert svg.PALETTE["accent"] in chart
    assert "not computed" in chart


def test_value_bars_draw_reference_line():
    chart = svg.value_bars(["p"], [0.75], "t", reference=0.5)
    assert "stroke-dasharray" in chart and ">0.750<" in chart


def test_missing_sections_are_named_not_drawn(audit_report_dict):
    """A report holding only headline numbers renders, and says what it lacks."""
    headline = {key: audit_report_dict[key] for key in ("schema_version", "verdict")}
    headline["reference"] = {"success_rule": audit_report_dict["reference"]["success_rule"]}
    page = render_report_html(headline)
    assert page.count("does not carry these numbers") == 4
    assert "<svg" not in page and "Traceback" not in page
    assert audit_report_dict["verdict"]["label"] in page


def test_gap_axis_of_a_tiny_gap_reads_distinct_numbers():
    chart = svg.interval_rows([("all", 0.0, 0.0, 0.0, False), ("layout", 0.0, -0.0, 0.0, False)], "t")
    labels = re.findall(r'text-anchor="middle">([^<]+)</text>', chart)
    assert labels == ["-0.010", "-0.005", "0", "+0.005", "+0.010"]
