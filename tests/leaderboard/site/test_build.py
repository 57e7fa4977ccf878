"""The published leaderboard: a pure function from audit reports to static files."""

from __future__ import annotations

import html
import json
import math
import random
import re
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import pytest

from benchmark_data.registry import Setting
from leaderboard.audit import SELECTION_ONLY_REASON
from leaderboard.rules.baselines import (
    BASELINE_RULES,
    DISPLAY_NAMES,
    EMBEDDING_RULES,
    OUTCOME_RULES,
    NotComputedRule,
    audit_baselines,
    baseline_submission_id,
    embedding_rule_scores,
)
from leaderboard.matrix import SceneTable, TransferData
from leaderboard.site.build import COLUMNS, LeaderboardEntry, SettingInfo, build_leaderboard
from leaderboard.rules.structural import object_proximity, path_clearance
from tests.support.site_data import (EMPTY_SETTING, HINDSIGHT, SETTING, audit_scores, make_data,
                                     make_entries, make_settings, synthetic_scene_scores)


@pytest.fixture(scope="module")
def data() -> TransferData:
    return make_data()


@pytest.fixture(scope="module")
def entries(data: TransferData) -> list[LeaderboardEntry]:
    return make_entries(data)


@pytest.fixture(scope="module")
def settings() -> list[SettingInfo]:
    return make_settings()


@pytest.fixture(scope="module")
def site(entries, settings) -> dict[str, bytes]:
    return build_leaderboard(entries, settings)


class TableParser(HTMLParser):
    """Rows of the first `table.sortable`: per row its attributes and cells (attrs, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict] = []
        self.rows: list[dict] = []
        self._cell: dict | None = None
        self._in_body = False
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tbody":
            self._in_body = True
        elif tag == "th":
            self.headers.append(attrs)
        elif tag == "tr" and self._in_body:
            self.rows.append({"attrs": attrs, "cells": []})
        elif tag == "td" and self._in_body:
            self._cell = {"attrs": attrs, "text": ""}
            self.rows[-1]["cells"].append(self._cell)
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "script":
            self._in_script = False

    def handle_data(self, text):
        if self._cell is not None:
            self._cell["text"] += text
        if self._in_script:
            self.scripts[-1] += text


def parse(page: bytes) -> TableParser:
    parser = TableParser()
    parser.feed(page.decode("utf-8"))
    return parser


def cell(row: dict, key: str) -> dict:
    return next(c for c in row["cells"] if c["attrs"].get("data-key") == key)


def test_site_has_index_setting_and_report_files(site, entries):
    expected = {"index.html", "index.json", f"settings/{SETTING}.html", f"settings/{SETTING}.json",
                f"settings/{EMPTY_SETTING}.html", f"settings/{EMPTY_SETTING}.json"}
    for entry in entries:
        expected |= {f"reports/{entry.submission_id}.html", f"reports/{entry.submission_id}.json"}
    assert set(site) == expected
    for entry in entries:
        assert json.loads(site[f"reports/{entry.submission_id}.json"]) == entry.report


def ranked_entries(entries):
    return [e for e in entries if e.submission_id not in HINDSIGHT]


def test_every_ranked_entry_has_one_row_with_its_verdict(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    ids = [row["attrs"]["data-submission"] for row in table.rows]
    assert sorted(ids) == sorted(e.submission_id for e in ranked_entries(entries))
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    for entry in ranked_entries(entries):
        row = by_id[entry.submission_id]
        assert row["attrs"]["class"].split()[0] == entry.kind
        verdict = row["cells"][-1]["text"]  # the label is the summary of a <details> holding the text
        assert verdict == f"{entry.report['verdict']['label']}{entry.report['verdict']['text']}"
    document = json.loads(site[f"settings/{SETTING}.json"])
    ranked = [r for r in document["rows"] if r["role"] == "ranked"]
    assert [r["submission_id"] for r in ranked] == ids
    references = {r["submission_id"] for r in document["rows"] if r["role"] == "reference"}
    assert references == HINDSIGHT
    assert {r["verdict"]["label"] for r in document["rows"]} >= {"expected value"}


def test_hindsight_rules_are_reference_lines_not_competitors(site, entries):
    page = site[f"settings/{SETTING}.html"].decode()
    document = json.loads(site[f"settings/{SETTING}.json"])
    lines = {line["rule"]: line for line in document["reference_lines"]}
    assert list(lines) == ["random", "best_fixed", "oracle"]
    report = entries[0].report["reference"]
    assert lines["best_fixed"]["success"]["value"] == report["success_best_fixed"]
    assert lines["best_fixed"]["advantage"] == report["best_fixed_advantage"]
    assert lines["oracle"]["advantage"] == 1.0 and lines["random"]["advantage"] == 0.0
    assert lines["oracle"]["submission_id"] == baseline_submission_id(SETTING, "oracle")
    for rule in ("random", "best_fixed", "oracle"):
        assert f'<li data-rule="{rule}">' in page
        assert f'data-submission="{baseline_submission_id(SETTING, rule)}"' not in page


def test_display_names_are_escaped(site):
    page = site[f"settings/{SETTING}.html"].decode()
    assert "noisy oracle &lt;b&gt;" in page
    assert "noisy oracle <b>" not in page


def test_reference_rows_for_every_outcome_rule(site):
    document = json.loads(site[f"settings/{SETTING}.json"])
    names = {r["display_name"] for r in document["rows"] if r["kind"] == "baseline"}
    assert names == {DISPLAY_NAMES[rule] for rule in OUTCOME_RULES}


def test_rows_are_ranked_by_advantage_with_a_ci_aware_rank(site):
    document = json.loads(site[f"settings/{SETTING}.json"])
    assert document["ranked_by"] == "advantage"
    ranked = [r for r in document["rows"] if r["role"] == "ranked"]
    values = [r["advantage"]["value"] for r in ranked]
    assert values == sorted(values, reverse=True)
    assert ranked[0]["submission_id"] == "sub-good" and ranked[-1]["submission_id"] == "sub-anti"
    for row in ranked:
        own = row["advantage"]["interval"]
        above = sum(1 for other in ranked if other is not row and other["advantage"]["interval"]
                    and other["advantage"]["interval"]["low"] > own["high"])
        assert row["rank"] == 1 + above
    # overlapping intervals share a rank: the rank is not the position
    ranks = [r["rank"] for r in ranked]
    assert ranks == sorted(ranks) and len(set(ranks)) < len(ranks)


def test_each_row_says_whether_it_beats_best_fixed_and_its_shuffle(site, entries):
    document = json.loads(site[f"settings/{SETTING}.json"])
    by_id = {r["submission_id"]: r for r in document["rows"]}
    for entry in ranked_entries(entries):
        standing = by_id[entry.submission_id]["standing"]
        reference, gap = entry.report["reference"], entry.report["gap"]["all"]
        assert standing["beats_best_fixed"] == (reference["success_rule"]
                                                > reference["success_best_fixed"])
        if gap["gap"] is not None:
            assert standing["beats_shuffle"] == (gap["gap_significant"]
                                                 and gap["direction"] == "above")
        assert standing["matters"] == bool(standing["beats_best_fixed"]
                                           and standing["beats_shuffle"])
    assert by_id["sub-good"]["standing"]["matters"]
    assert not by_id["sub-pick"]["standing"]["matters"]
    table = parse(site[f"settings/{SETTING}.html"])
    row = next(r for r in table.rows if r["attrs"]["data-submission"] == "sub-good")
    assert cell(row, "vs_best_fixed")["text"].startswith("yes (+")
    assert "(significant)" in cell(row, "gap")["text"]
    anti = next(r for r in table.rows if r["attrs"]["data-submission"] == "sub-anti")
    assert cell(anti, "vs_best_fixed")["text"].startswith("no (-")


def test_numeric_cells_carry_sort_keys_and_interval_titles(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    report = next(e for e in entries if e.submission_id == "sub-good").report
    success = cell(by_id["sub-good"], "success")
    assert float(success["attrs"]["data-sort"]) == report["reference"]["success_rule"]
    low, high = report["intervals"]["success_rule"]["low"], report["intervals"]["success_rule"]["high"]
    assert f"95% interval [{low:.3f}, {high:.3f}]" in success["attrs"]["title"]
    main = cell(by_id["sub-good"], "main")
    a_low, a_high = report["intervals"]["advantage"]["low"], report["intervals"]["advantage"]["high"]
    assert main["text"] == f"{report['reference']['advantage']:.3f} [{a_low:.3f}, {a_high:.3f}]"
    auroc = cell(by_id["sub-good"], "within_auroc")
    interval = report["intervals"]["within_query_auroc"]
    assert f"[{interval['low']:.3f}, {interval['high']:.3f}]" in auroc["attrs"]["title"]
    top = cell(by_id["sub-good"], "top_pick")
    assert float(top["attrs"]["data-sort"]) == report["concentration"]["concentration_ratio"]


def test_sorting_markup_and_inline_script(site):
    table = parse(site[f"settings/{SETTING}.html"])
    numeric = [h for h in table.headers if h.get("data-type") == "number"]
    assert [h["data-key"] for h in numeric] == ["rank", "main", "vs_best_fixed", "gap", "success",
                                                "top_pick", "within_auroc"]
    assert all(h.get("title") for h in numeric)
    script = "".join(table.scripts)
    assert "addEventListener(\"click\"" in script and "data-sort" in script


def test_nulls_show_na_with_the_reason(site):
    table = parse(site[f"settings/{SETTING}.html"])
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    auroc = cell(by_id["sub-pick"], "within_auroc")
    assert auroc["text"] == "n/a"
    assert auroc["attrs"]["data-sort"] == ""
    assert auroc["attrs"]["title"] == f"n/a: {SELECTION_ONLY_REASON}"
    document = json.loads(site[f"settings/{SETTING}.json"])
    random_row = next(r for r in document["rows"]
                      if r["submission_id"] == baseline_submission_id(SETTING, "random"))
    assert random_row["gap"]["value"] is None


def test_gap_mark_follows_significance(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    marks = {}
    for entry in ranked_entries(entries):
        gap = entry.report["gap"]["all"]
        if gap["gap"] is None:
            continue
        text = cell(by_id[entry.submission_id], "gap")["text"].split(" (")[0]
        marks[entry.submission_id] = text
        if not gap["gap_significant"]:
            assert not text.endswith(("\u25b2", "\u25bc"))
        elif gap["direction"] == "below":
            assert text.endswith("\u25bc")
        else:
            assert text.endswith("\u25b2")
    # The anti-ranker's selections are assigned to the wrong scenes, significantly.
    assert marks["sub-anti"].endswith("\u25bc")
    assert marks["sub-good"].endswith("\u25b2")


def test_pages_are_self_contained(site):
    for key, body in site.items():
        if not key.endswith(".html"):
            continue
        page = body.decode()
        # The papers are links to arXiv (followed, never fetched); nothing else leaves the site.
        page = re.sub(r'<a href="https://arxiv\.org/abs/[0-9.]+">', "<a>", page)
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), key
        assert "fetch(" not in page and "XMLHttpRequest" not in page, key


def test_index_lists_settings_with_discrimination_best_fixed_and_best_submission(site, entries):
    index = json.loads(site["index.json"])
    by_id = {s["setting_id"]: s for s in index["settings"]}
    ours = by_id[SETTING]
    assert ours["n_submissions"] == 3 and ours["n_ranked"] == 5
    reference = entries[0].report["reference"]
    assert ours["discrimination"]["discriminates"] is True
    assert ours["discrimination"]["oracle_minus_random"] == pytest.approx(
        reference["success_oracle"] - reference["success_random"])
    assert ours["best_fixed"]["success"]["value"] == reference["success_best_fixed"]
    best = ours["best_submission"]
    assert best["submission_id"] == "sub-good" and best["matters"]
    good = next(e for e in entries if e.submission_id == "sub-good").report
    assert best["advantage"]["value"] == good["reference"]["advantage"]
    assert best["advantage"]["interval"]["low"] == good["intervals"]["advantage"]["low"]
    assert by_id[EMPTY_SETTING]["best_submission"] is None
    assert by_id[EMPTY_SETTING]["discrimination"]["discriminates"] is None
    assert (by_id[EMPTY_SETTING]["cells_done"], by_id[EMPTY_SETTING]["cells_total"]) == (1200, 15000)
    page = site["index.html"].decode()
    assert f'href="settings/{SETTING}.html"' in page and "1200 / 15000" in page
    for words in ("Beyond End-Task Success", "expaudit-client submit scores.csv", "selector input",
                  "api/v1/docs", "docker compose up", "expaudit download"):
        assert words in page, words
    assert b"No published rows yet" in site[f"settings/{EMPTY_SETTING}.html"]


def test_a_submission_equal_to_random_is_not_a_leader(data, settings):
    """The reported case: a rule at A = 0 against best-fixed at 0.6+ is shown as not beating it."""
    flat = np.zeros(data.success_matrix().shape)
    rows = [LeaderboardEntry("sub-flat", SETTING, "ties everywhere", "submission",
                             "2026-03-01T00:00:00Z", audit_scores(data, flat))]
    index = json.loads(build_leaderboard(rows, settings)["index.json"])
    best = {s["setting_id"]: s for s in index["settings"]}[SETTING]["best_submission"]
    assert best["submission_id"] == "sub-flat"
    assert best["beats_best_fixed"] is False and best["matters"] is False
    page = build_leaderboard(rows, settings)["index.html"].decode()
    assert "does not beat best-fixed" in page


def flat_data(base: TransferData) -> TransferData:
    """Every experience succeeds in every scene but a handful: oracle - random below 0.05."""
    outcomes = np.ones_like(base.outcomes)
    outcomes[0, :20, :] = 0
    return TransferData(base.experience_ids, base.scenes, outcomes)


def test_a_setting_that_cannot_discriminate_says_why_and_is_left_out(data):
    settings = [SettingInfo(Setting(SETTING, "stack", "replay", 10, "stack-orig"), 50000, 50000),
                SettingInfo(Setting("stack-replay-k3-orig", "stack", "replay", 3, "stack-orig"),
                            3000, 3000)]
    flat = flat_data(data)
    rows = make_entries(data) + [
        replace(e, submission_id=e.submission_id.replace(SETTING, "stack-replay-k3-orig")
                if e.kind == "baseline" else e.submission_id + "-flat",
                setting_id="stack-replay-k3-orig", report=report)
        for e, report in zip(make_entries(data), [r.report for r in make_entries(flat)])]
    site = build_leaderboard(rows, settings)
    document = json.loads(site["settings/stack-replay-k3-orig.json"])
    found = document["discrimination"]
    assert found["discriminates"] is False and found["oracle_minus_random"] < 0.05
    assert "below 0.05" in found["reason"] and document["ranked_by"] == "success_rule"
    page = site["settings/stack-replay-k3-orig.html"].decode()
    assert "This setting does not discriminate." in page
    summary = json.loads(site["index.json"])["cross_setting"]
    assert summary["settings"] == [SETTING]
    assert summary["left_out"][0]["setting_id"] == "stack-replay-k3-orig"
    across = site["index.html"].decode().split("Across settings")[1]
    assert f"stack-replay-k3-orig ({summary['left_out'][0]['reason']})" in across


GATES_FAILED = ("door-e000 Policy: draws 1-4 success 0.16 (n 160), below its gate 0.20",
                "door-e001 Policy: <own> success 0.70 (n 20), below its gate 0.80")
"""Failed policy gates as the publisher hands them over; the second checks escaping."""


def _rows_with_a_flat_second_setting(data, second: str) -> list:
    """The rows of SETTING, and the same rules on `second` audited on a flat matrix (a setting
    that does not discriminate)."""
    return make_entries(data) + [
        replace(e, submission_id=e.submission_id.replace(SETTING, second)
                if e.kind == "baseline" else f"{e.submission_id}-{second}",
                setting_id=second, report=report)
        for e, report in zip(make_entries(data), [r.report for r in make_entries(flat_data(data))])]


def test_failed_policy_gates_are_shown_beside_the_discrimination_label(data):
    gated = "door-policy-k3-orig"
    settings = [SettingInfo(Setting(SETTING, "stack", "replay", 10, "stack-orig"), 50000, 50000),
                SettingInfo(Setting(gated, "door", "policy", 3, "door-orig"), 3000, 3000,
                            policy_gates_failed=GATES_FAILED)]
    rows = _rows_with_a_flat_second_setting(data, gated)
    site = build_leaderboard(rows, settings)
    assert json.loads(site[f"settings/{gated}.json"])["setting"]["policy_gates_failed"] == list(GATES_FAILED)
    assert json.loads(site[f"settings/{SETTING}.json"])["setting"]["policy_gates_failed"] == []
    by_id = {s["setting_id"]: s for s in json.loads(site["index.json"])["settings"]}
    assert by_id[gated]["policy_gates_failed"] == list(GATES_FAILED)
    assert by_id[SETTING]["policy_gates_failed"] == []
    escaped = f"{GATES_FAILED[0]}; {html.escape(GATES_FAILED[1])}"
    page = site[f"settings/{gated}.html"].decode()
    assert ('<p class="warning" id="policy-gates">Policy gates failed before this setting was '
            f"generated (<code>docs/policy_protocol.md</code>): {escaped}.</p>") in page
    assert "<own>" not in page
    assert 'id="policy-gates"' not in site[f"settings/{SETTING}.html"].decode()
    reason = by_id[gated]["discrimination"]["reason"]
    index = site["index.html"].decode()
    assert f'<span class="no">no</span>: {reason}; failed policy gates: {escaped}; label: ' in index
    # the cross-setting summary leaves it out with the same reason and gates
    left_out = {e["setting_id"]: e["reason"] for e in json.loads(site["index.json"])["cross_setting"]["left_out"]}
    assert left_out[gated] == f"{reason}; failed policy gates: {'; '.join(GATES_FAILED)}"
    assert f"{gated} ({reason}; failed policy gates: {escaped})" in index.split("Across settings")[1]
    assert "<own>" not in index and index.count("failed policy gates") == 2


def test_a_narrow_quality_range_is_labelled_on_the_setting_page_and_its_card(data):
    narrow = "stack-replay-k3-orig"
    settings = [SettingInfo(Setting(SETTING, "stack", "replay", 10, "stack-orig"), 50000, 50000,
                            quality_range=0.5),
                SettingInfo(Setting(narrow, "stack", "replay", 3, "stack-orig"), 3000, 3000,
                            quality_range=0.039)]
    rows = _rows_with_a_flat_second_setting(data, narrow)
    site = build_leaderboard(rows, settings)
    text = ("quality range (best experience's mean success minus the worst's) 0.039 is below 0.10: "
            "the experiences barely differ in quality")
    setting = json.loads(site[f"settings/{narrow}.json"])["setting"]
    assert setting["quality_range"] == 0.039 and setting["quality_shortfall"] == text
    assert json.loads(site[f"settings/{SETTING}.json"])["setting"]["quality_shortfall"] is None
    page = site[f"settings/{narrow}.html"].decode()
    assert '<p class="warning" id="quality-range">Its quality range (best experience' in page
    assert "0.039 is below 0.10: the experiences barely differ in quality; a selector has little" in page
    assert 'id="quality-range"' not in site[f"settings/{SETTING}.html"].decode()
    card = site["index.html"].decode().split(f'data-setting="{narrow}"')[1].split("</dl>")[0]
    assert "; quality range (best experience" in card and "0.039 is below 0.10: the experiences barely" in card
    with pytest.raises(ValueError, match=r"setting 'x': field 'quality_range' must be None or a float in 0-1"):
        SettingInfo(Setting("x", "stack", "replay", 3, "stack-orig"), 1, 10, quality_range=1.5)


def test_the_publisher_gives_a_complete_matrix_its_quality_range_and_no_other():
    from service.catalog.catalog import StaticCatalog
    from service.submissions.publishing import setting_infos

    scenes = SceneTable(scene_ids=("s0", "s1"), state_ids=np.array([0, 1]),
                        layout_level=np.array([0, 0]), appearance_draw=np.array([0, 0]))
    outcomes = np.zeros((2, 2, 2), dtype=np.int8)
    outcomes[0, 0, :] = 1                      # e0: 0.5 mean success, e1: 0.0
    partial = outcomes.copy()
    partial[1, 1, 1] = -1                      # one cell not executed
    catalog = StaticCatalog({
        Setting("lab-full", "stack", "replay", 2, "stack-orig"): TransferData(("e0", "e1"), scenes, outcomes),
        Setting("lab-partial", "stack", "replay", 2, "stack-orig"): TransferData(("e0", "e1"), scenes, partial)})
    assert [(i.setting_id, i.quality_range) for i in setting_infos(catalog)] == [
        ("lab-full", 0.5), ("lab-partial", None)]


def test_cross_setting_summary_has_every_ranked_rule_with_intervals(site, entries):
    summary = json.loads(site["index.json"])["cross_setting"]
    keys = [r["key"] for r in summary["rules"]]
    assert set(keys) == {"sub-good", "sub-pick", "sub-anti", "baseline-recency",
                         "baseline-track-record"}
    good = next(r for r in summary["rules"] if r["key"] == "sub-good")["cells"][SETTING]
    report = next(e for e in entries if e.submission_id == "sub-good").report
    assert good["value"] == report["reference"]["advantage"] and good["matters"]
    assert good["interval"]["high"] == report["intervals"]["advantage"]["high"]
    page = site["index.html"].decode()
    assert 'id="figure-summary"' in page and 'id="summary"' in page


def test_report_page_names_setting_rule_submitter_date_and_links_back(data, settings):
    row = LeaderboardEntry("sub-x.stack-replay-k10-a", SETTING, "my rule", "submission",
                           "2026-02-01T10:00:00Z", audit_scores(data, data.success_matrix()),
                           submitter="lab-a")
    page = build_leaderboard([row], settings)["reports/sub-x.stack-replay-k10-a.html"].decode()
    assert "<title>my rule on stack-replay-k10-a · expaudit</title>" in page
    assert 'name="viewport"' in page
    assert f'href="../settings/{SETTING}.html"' in page and 'href="../index.html"' in page
    assert "<dd>lab-a</dd>" in page and "<dd>2026-02-01</dd>" in page
    assert html.escape(row.report["verdict"]["text"]) in page
    assert page.count("<svg") == 4  # A, selections, gap, AUROC


def test_report_without_sections_renders_what_it_has(entries, settings):
    """A sealed setting's report carries only headline numbers: the page says the rest is absent."""
    full = next(e for e in entries if e.submission_id == "sub-good").report
    headline = {"schema_version": full["schema_version"], "verdict": full["verdict"],
                "reference": {k: full["reference"][k] for k in ("success_rule", "advantage")},
                "intervals": {"advantage": full["intervals"]["advantage"]}}
    row = LeaderboardEntry("sub-h", SETTING, "sealed rule", "submission", "2026-02-01T10:00:00Z",
                           headline)
    site = build_leaderboard([row], settings)
    page = site["reports/sub-h.html"].decode()
    assert "does not carry these numbers" in page and html.escape(full["verdict"]["text"]) in page
    assert "sub-h" in site[f"settings/{SETTING}.html"].decode()


def test_a_sealed_setting_shows_released_numbers_only(settings):
    """A sealed report (service.sealed.report) has released success, random and oracle, no
    best-fixed and no sections: the board ranks it without inventing the rest."""
    sealed = {"schema_version": "sealed-1", "sealed": True,
              "inputs": {"setting_id": SETTING, "n_experiences": 10, "n_scenes": 200},
              "reference": {"success_rule": 0.85, "success_random": 0.6, "success_oracle": 0.95,
                            "advantage": 0.714286},
              "release": {"rule": "ladder", "margin": 0.07, "new_best": True, "best": 0.85},
              "verdict": {"label": "sealed", "text": "Success 0.85 (rounded); your best."}}
    rows = [LeaderboardEntry("sub-s", SETTING, "sealed rule", "submission",
                             "2026-02-01T10:00:00Z", sealed, submitter="lab-s")]
    site = build_leaderboard(rows, settings)
    document = json.loads(site[f"settings/{SETTING}.json"])
    assert [line["rule"] for line in document["reference_lines"]] == ["random", "oracle"]
    row = document["rows"][0]
    assert row["rank"] == 1 and row["standing"]["beats_best_fixed"] is None
    summary = {s["setting_id"]: s for s in json.loads(site["index.json"])["settings"]}[SETTING]
    assert summary["best_fixed"] is None and summary["best_submission"]["submission_id"] == "sub-s"
    assert "not published" in site["index.html"].decode()
    page = site["reports/sub-s.html"].decode()
    assert "Success 0.85 (rounded); your best." in page
    assert f'href="../settings/{SETTING}.html"' in page and "<dd>lab-s</dd>" in page


def test_thumbnails_and_notice(entries, settings):
    png = b"\x89PNG\r\n\x1a\nfake"
    site = build_leaderboard(entries, settings, thumbnails={SETTING: png},
                             notice="Reference reports are being computed.")
    assert site[f"thumbs/{SETTING}.png"] == png
    assert f'src="thumbs/{SETTING}.png"' in site["index.html"].decode()
    for key in ("index.html", f"settings/{SETTING}.html", "reports/sub-good.html"):
        assert "Reference reports are being computed." in site[key].decode(), key
    with pytest.raises(ValueError, match="thumbnails: setting_id 'nope' is not among"):
        build_leaderboard(entries, settings, thumbnails={"nope": png})


def test_interval_axis_never_reads_signed_zeros():
    from leaderboard.site.svg import interval_rows

    chart = interval_rows([("all", 0.0, -0.00001, 0.00002, False)], title="t")
    labels = re.findall(r">([-+]?[0-9.]+)</text>", chart)
    assert len(labels) == len(set(labels)) == 5 and "0" in labels
    assert not any(re.fullmatch(r"[-+]0\.0+", label) for label in labels)


def test_same_entries_give_same_bytes_in_any_order(entries, settings, site):
    shuffled = list(entries)
    random.Random(3).shuffle(shuffled)
    again = build_leaderboard(shuffled, settings)
    assert list(again) == list(site)
    assert again == site


def test_index_keeps_the_settings_order(entries, settings, site):
    listed = [s["setting_id"] for s in json.loads(site["index.json"])["settings"]]
    assert listed == [s.setting_id for s in settings]
    flipped = json.loads(build_leaderboard(entries, settings[::-1])["index.json"])["settings"]
    assert [s["setting_id"] for s in flipped] == listed[::-1]


def test_unknown_setting_is_rejected(entries, settings):
    stray = replace(entries[0], setting_id="door-policy-k3-fresh")
    with pytest.raises(ValueError, match=r"setting_id 'door-policy-k3-fresh' is not among"):
        build_leaderboard([stray], settings)


def test_duplicate_submission_id_is_rejected(entries, settings):
    with pytest.raises(ValueError, match=r"submission_id 'sub-good' appears twice"):
        good = next(e for e in entries if e.submission_id == "sub-good")
        build_leaderboard([good, replace(good, display_name="again")], settings)


def test_duplicate_setting_is_rejected(settings):
    with pytest.raises(ValueError, match=r"setting_id 'stack-replay-k10-a' is listed twice"):
        build_leaderboard([], [settings[0], settings[0]])


def test_nan_in_a_report_is_rejected(entries, settings):
    bad = json.loads(json.dumps(entries[-1].report))
    bad["reference"]["headroom"] = math.nan
    with pytest.raises(ValueError, match=r"entry 'sub-anti': report field 'reference.headroom' "
                                         r"is NaN or infinite"):
        build_leaderboard([replace(entries[-1], report=bad)], settings)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("submission_id", "../etc", r"field 'submission_id' must be .* got '\.\./etc'"),
        ("setting_id", "", r"field 'setting_id' must be .* got ''"),
        ("kind", "rule", r"field 'kind' must be one of \('baseline', 'submission'\), got 'rule'"),
        ("report", [], r"field 'report' must be a dict, got list"),
    ],
)
def test_entry_fields_are_validated(field, value, message):
    fields = dict(submission_id="a", setting_id="b", display_name="c", kind="submission",
                  submitted_at="2026-01-01T00:00:00Z", report={})
    fields[field] = value
    with pytest.raises(ValueError, match=message):
        LeaderboardEntry(**fields)


def test_setting_cells_are_validated():
    with pytest.raises(ValueError, match=r"field 'cells_done' must be between 0 and "
                                         r"cells_total=10, got 11"):
        SettingInfo(Setting("x", "stack", "replay", 3, "stack-orig"), 11, 10)


@pytest.mark.parametrize("gates", [["a line"], ("a line", 3), "a line"])
def test_setting_policy_gates_are_validated(gates):
    with pytest.raises(ValueError, match=r"setting 'x': field 'policy_gates_failed' must be a "
                                         r"tuple of str, got"):
        SettingInfo(Setting("x", "stack", "replay", 3, "stack-orig"), 1, 10, policy_gates_failed=gates)


# ------------------------------------------------------ rules not computed --

def baseline_rows(data: TransferData, scene_scores: dict, setting_id: str = SETTING) -> list:
    """Rows of every reference rule the way the publish job builds them."""
    rows = []
    for rule, report in audit_baselines(data, scene_scores, n_shuffles=300,
                                        n_bootstrap=300).items():
        missing = isinstance(report, NotComputedRule)
        rows.append(LeaderboardEntry(
            baseline_submission_id(setting_id, rule), setting_id, DISPLAY_NAMES[rule], "baseline",
            "", {} if missing else report, report.reason if missing else None))
    return rows


@pytest.fixture(scope="module")
def full_site(data, settings, tmp_path_factory) -> dict[str, bytes]:
    """Every reference rule: structural rows computed from a synthetic layout, image rules
    not computed (their weights path does not exist)."""
    absent = tmp_path_factory.mktemp("weights") / "absent.pth"
    scores = synthetic_scene_scores(data)
    scores.update(embedding_rule_scores(None, data, names=("resnet18", "policy_encoder"),
                                        weights={"resnet18": absent}, environ={}))
    return build_leaderboard(baseline_rows(data, scores), settings)


def test_every_computed_reference_rule_has_a_row(full_site):
    document = json.loads(full_site[f"settings/{SETTING}.json"])
    ids = [row["submission_id"] for row in document["rows"]]
    computed = [r for r in BASELINE_RULES if r not in ("resnet18", "policy_encoder")
                and r not in EMBEDDING_RULES]
    assert sorted(ids) == sorted(baseline_submission_id(SETTING, r) for r in computed)


def test_structural_rows_have_numbers_verdict_and_report_pages(full_site):
    rows = {r["submission_id"]: r for r in json.loads(full_site[f"settings/{SETTING}.json"])["rows"]}
    for rule in ("object_proximity", "path_clearance"):
        sid = baseline_submission_id(SETTING, rule)
        assert rows[sid]["success_rule"]["value"] is not None
        assert rows[sid]["role"] == "ranked"
        assert "<svg" in full_site[f"reports/{sid}.html"].decode()


def test_rules_not_computed_are_not_shown_to_the_public(full_site):
    """Operator instructions (set EXPAUDIT_..._WEIGHTS) never reach a published file."""
    for rule in ("resnet18", "policy_encoder"):
        sid = baseline_submission_id(SETTING, rule)
        assert f"reports/{sid}.html" not in full_site and f"reports/{sid}.json" not in full_site
    for key, body in full_site.items():
        text = body.decode("utf-8", "replace")
        assert "weights missing" not in text and "_WEIGHTS" not in text, key
        assert "not computed:" not in text, key
        assert "absent.pth" not in text, key


def test_not_computed_entry_is_validated():
    fields = dict(submission_id="a", setting_id="b", display_name="c", kind="baseline",
                  submitted_at="")
    with pytest.raises(ValueError, match=r"entry 'a': field 'not_computed' must be a non-empty "
                                         r"reason, got ' '"):
        LeaderboardEntry(**fields, report={}, not_computed=" ")
    with pytest.raises(ValueError, match=r"entry 'a': field 'report' must be empty when "
                                         r"'not_computed' is set"):
        LeaderboardEntry(**fields, report={"reference": {}}, not_computed="weights missing")
