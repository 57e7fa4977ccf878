"""The published leaderboard: a pure function from audit reports to static files."""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import pytest

from leaderboard.audit import SELECTION_ONLY_REASON, run_audit
from leaderboard.baselines import (
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
from leaderboard.structural import object_proximity, path_clearance
from leaderboard.publish import (
    COLUMNS,
    NOT_COMPUTED_LABEL,
    LeaderboardEntry,
    SettingInfo,
    build_leaderboard,
)

SETTING = "stack-replay-k10-a"
EMPTY_SETTING = "door-policy-k3-orig"


def make_data(k: int = 6, n_states: int = 40, n_draws: int = 5, n_seeds: int = 5,
              seed: int = 1) -> TransferData:
    """A transfer tensor with experience quality and scene-specific affinity."""
    rng = np.random.default_rng(seed)
    q = n_states * n_draws
    state = np.repeat(np.arange(n_states), n_draws)
    draw = np.tile(np.arange(n_draws), n_states)
    layout = state % 4
    quality = rng.uniform(0.2, 0.8, size=(k, 1))
    affinity = rng.normal(0.0, 0.25, size=(k, n_states))[:, state]
    p = np.clip(quality + affinity, 0.0, 1.0)
    outcomes = (rng.random((k, q, n_seeds)) < p[:, :, None]).astype(np.int8)
    scenes = SceneTable(
        scene_ids=tuple(f"s{s:02d}-d{d}" for s, d in zip(state, draw)),
        state_ids=state, layout_level=layout, appearance_draw=draw,
    )
    return TransferData(tuple(f"stack-e{i:03d}" for i in range(k)), scenes, outcomes)


def synthetic_scene_scores(data: TransferData) -> dict:
    """Structural scores of a small synthetic layout: 2 objects per scene, one box obstacle
    in every other state, straight-line paths; the image rules are not computed."""
    rng = np.random.default_rng(5)
    k, q = len(data.experience_ids), data.scenes.n_scenes
    base = rng.uniform(-0.2, 0.2, size=(k, 2, 3))
    query = rng.uniform(-0.2, 0.2, size=(q, 2, 3))
    obstacles = np.full((q, 6), np.nan)
    has_obstacle = data.scenes.state_ids % 2 == 0
    obstacles[has_obstacle] = (0.0, 0.0, 0.85, 0.03, 0.03, 0.05)
    paths = [[np.linspace(base[i, 0], query[s, 1], 20) for s in range(q)] for i in range(k)]
    scores = {"object_proximity": object_proximity(query, base),
              "path_clearance": path_clearance(paths, obstacles)}
    scores.update({name: "weights missing: synthetic setting has no images"
                   for name in EMBEDDING_RULES})
    return scores


def _audit(data: TransferData, scores: np.ndarray, selection_only: bool = False) -> dict:
    return run_audit(data, scores, selection_only=selection_only, n_shuffles=300,
                     n_bootstrap=300, seed=0).to_dict()


@pytest.fixture(scope="module")
def data() -> TransferData:
    return make_data()


def make_entries(data: TransferData, setting_id: str = SETTING) -> list[LeaderboardEntry]:
    """Reference rows plus three submissions: a good ranker, a selection-only
    rule and an anti-ranker (chooses the worst experience per scene)."""
    y = data.success_matrix()
    noise = np.random.default_rng(7).normal(0, 0.3, y.shape)
    rows = [
        LeaderboardEntry(baseline_submission_id(setting_id, rule), setting_id, DISPLAY_NAMES[rule],
                         "baseline", "2026-01-01T00:00:00Z", report)
        for rule, report in audit_baselines(data, n_shuffles=300, n_bootstrap=300).items()
    ]
    picks = np.zeros_like(y)
    picks[2] = 1.0
    rows += [
        LeaderboardEntry("sub-good", setting_id, "noisy oracle <b>", "submission",
                         "2026-02-01T10:00:00Z", _audit(data, y + noise)),
        LeaderboardEntry("sub-pick", setting_id, "always e002", "submission",
                         "2026-02-02T10:00:00Z", _audit(data, picks, selection_only=True)),
        LeaderboardEntry("sub-anti", setting_id, "anti-ranker", "submission",
                         "2026-02-03T10:00:00Z", _audit(data, -y)),
    ]
    return rows


def make_settings() -> list[SettingInfo]:
    return [
        SettingInfo(SETTING, "stack", "replay", 10, "stack-orig", False, 50000, 50000),
        SettingInfo(EMPTY_SETTING, "door", "policy", 3, "door-orig", False, 1200, 15000),
    ]


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


def test_every_entry_has_one_row_with_its_verdict(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    ids = [row["attrs"]["data-submission"] for row in table.rows]
    assert sorted(ids) == sorted(e.submission_id for e in entries)
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    for entry in entries:
        row = by_id[entry.submission_id]
        assert row["attrs"]["class"] == entry.kind
        verdict = row["cells"][-1]["text"]
        assert verdict == f"{entry.report['verdict']['label']}: {entry.report['verdict']['text']}"
    document = json.loads(site[f"settings/{SETTING}.json"])
    assert [r["submission_id"] for r in document["rows"]] == ids
    assert {r["verdict"]["label"] for r in document["rows"]} >= {"expected value"}


def test_display_names_are_escaped(site):
    page = site[f"settings/{SETTING}.html"].decode()
    assert "noisy oracle &lt;b&gt;" in page
    assert "noisy oracle <b>" not in page


def test_reference_rows_for_every_outcome_rule(site):
    document = json.loads(site[f"settings/{SETTING}.json"])
    names = {r["display_name"] for r in document["rows"] if r["kind"] == "baseline"}
    assert names == {DISPLAY_NAMES[rule] for rule in OUTCOME_RULES}


def test_rows_default_to_success_descending(site):
    document = json.loads(site[f"settings/{SETTING}.json"])
    success = [r["success_rule"]["value"] for r in document["rows"]]
    assert success == sorted(success, reverse=True)
    assert document["rows"][0]["display_name"] == DISPLAY_NAMES["oracle"]


def test_numeric_cells_carry_sort_keys_and_interval_titles(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    report = next(e for e in entries if e.submission_id == "sub-good").report
    success = cell(by_id["sub-good"], "success")
    assert float(success["attrs"]["data-sort"]) == report["reference"]["success_rule"]
    low, high = report["intervals"]["success_rule"]["low"], report["intervals"]["success_rule"]["high"]
    assert f"95% interval [{low:.3f}, {high:.3f}]" in success["attrs"]["title"]
    auroc = cell(by_id["sub-good"], "within_auroc")
    interval = report["intervals"]["within_query_auroc"]
    assert f"[{interval['low']:.3f}, {interval['high']:.3f}]" in auroc["attrs"]["title"]
    top = cell(by_id["sub-good"], "top_pick")
    assert float(top["attrs"]["data-sort"]) == report["concentration"]["concentration_ratio"]


def test_sorting_markup_and_inline_script(site):
    table = parse(site[f"settings/{SETTING}.html"])
    numeric = [h for h in table.headers if h.get("data-type") == "number"]
    assert [h["data-key"] for h in numeric] == [c.key for c in COLUMNS]
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
    random_row = by_id[baseline_submission_id(SETTING, "random")]
    gap = cell(random_row, "gap")
    assert gap["text"] == "n/a" and "no selection is drawn" in gap["attrs"]["title"]


def test_gap_mark_follows_significance(site, entries):
    table = parse(site[f"settings/{SETTING}.html"])
    by_id = {row["attrs"]["data-submission"]: row for row in table.rows}
    marks = {}
    for entry in entries:
        gap = entry.report["gap"]["all"]
        if gap["gap"] is None:
            continue
        text = cell(by_id[entry.submission_id], "gap")["text"]
        marks[entry.submission_id] = text
        if not gap["gap_significant"]:
            assert not text.endswith(("\u25b2", "\u25bc"))
        elif gap["direction"] == "below":
            assert text.endswith("\u25bc")
        else:
            assert text.endswith("\u25b2")
    # The anti-ranker's selections are assigned to the wrong scenes, significantly.
    assert marks["sub-anti"].endswith("\u25bc")
    assert marks["baseline-oracle-" + SETTING].endswith("\u25b2")


def test_pages_are_self_contained(site):
    for key, body in site.items():
        if not key.endswith(".html"):
            continue
        page = body.decode()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), key
        assert "fetch(" not in page and "XMLHttpRequest" not in page, key


def test_index_lists_settings_with_completeness_and_leader(site):
    index = json.loads(site["index.json"])
    by_id = {s["setting_id"]: s for s in index["settings"]}
    assert by_id[SETTING]["n_baselines"] == 5 and by_id[SETTING]["n_submissions"] == 3
    assert by_id[SETTING]["leader"]["submission_id"] == "sub-good"
    assert by_id[EMPTY_SETTING]["leader"] is None
    assert (by_id[EMPTY_SETTING]["cells_done"], by_id[EMPTY_SETTING]["cells_total"]) == (1200, 15000)
    page = site["index.html"].decode()
    assert f'href="settings/{SETTING}.html"' in page and "1200 / 15000" in page
    assert b"No published rows yet" in site[f"settings/{EMPTY_SETTING}.html"]


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
        SettingInfo("x", "stack", "replay", 3, "stack-orig", False, 11, 10)


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


def test_every_reference_rule_has_a_row(full_site):
    document = json.loads(full_site[f"settings/{SETTING}.json"])
    ids = [row["submission_id"] for row in document["rows"]]
    assert sorted(ids) == sorted(baseline_submission_id(SETTING, r) for r in BASELINE_RULES)
    index = {s["setting_id"]: s for s in json.loads(full_site["index.json"])["settings"]}
    assert index[SETTING]["n_baselines"] == 14
    assert index[SETTING]["n_not_computed"] == len(EMBEDDING_RULES)


def test_structural_rows_have_numbers_verdict_and_report_pages(full_site):
    rows = {r["submission_id"]: r for r in json.loads(full_site[f"settings/{SETTING}.json"])["rows"]}
    for rule in ("object_proximity", "path_clearance"):
        sid = baseline_submission_id(SETTING, rule)
        assert rows[sid]["not_computed"] is None
        assert rows[sid]["success_rule"]["value"] is not None
        assert rows[sid]["verdict"]["label"] != NOT_COMPUTED_LABEL
        assert "<svg" in full_site[f"reports/{sid}.html"].decode()


def test_not_computed_row_says_why(full_site):
    sid = baseline_submission_id(SETTING, "resnet18")
    rows = {r["submission_id"]: r for r in json.loads(full_site[f"settings/{SETTING}.json"])["rows"]}
    row = rows[sid]
    assert row["not_computed"].startswith("weights missing: ")
    assert "absent.pth' is not a file" in row["not_computed"]
    assert row["verdict"] == {"label": NOT_COMPUTED_LABEL, "text": row["not_computed"]}
    assert row["report_html"] is None and "success_rule" not in row
    assert f"reports/{sid}.html" not in full_site and f"reports/{sid}.json" not in full_site
    table = parse(full_site[f"settings/{SETTING}.html"])
    html_row = next(r for r in table.rows if r["attrs"]["data-submission"] == sid)
    assert "not-computed" in html_row["attrs"]["class"]
    verdict = html_row["cells"][-1]["text"]
    assert verdict.startswith("not computed: weights missing: ")
    assert all(cell(html_row, c.key)["text"] == "n/a" for c in COLUMNS)
    assert cell(html_row, "success")["attrs"]["title"] == f"not computed: {row['not_computed']}"
    policy = next(r for r in table.rows
                  if r["attrs"]["data-submission"] == baseline_submission_id(SETTING, "policy_encoder"))
    assert "Policy+DR image policies are not trained" in policy["cells"][-1]["text"]


def test_not_computed_rows_come_last(full_site):
    rows = json.loads(full_site[f"settings/{SETTING}.json"])["rows"]
    flags = [row["not_computed"] is not None for row in rows]
    assert flags == sorted(flags) and flags[-1]


def test_not_computed_entry_is_validated():
    fields = dict(submission_id="a", setting_id="b", display_name="c", kind="baseline",
                  submitted_at="")
    with pytest.raises(ValueError, match=r"entry 'a': field 'not_computed' must be a non-empty "
                                         r"reason, got ' '"):
        LeaderboardEntry(**fields, report={}, not_computed=" ")
    with pytest.raises(ValueError, match=r"entry 'a': field 'report' must be empty when "
                                         r"'not_computed' is set"):
        LeaderboardEntry(**fields, report={"reference": {}}, not_computed="weights missing")
