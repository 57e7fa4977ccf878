"""The readout leaderboard's files: rows ranked by controlled MAE with intervals, the reference
representations of the committed reference reports beside them, and nothing per initialization.

Built from the committed banks' reference reports and from served reports the real engine
computed on the small synthetic bank (`tests.support.readout_site`).
"""

from __future__ import annotations

import copy
import json

import pytest

from leaderboard.errors import BrokenContract
from leaderboard.site.build import build_leaderboard
from leaderboard.site.readout_entries import ReadoutEntry, ReadoutSettingInfo, reference_entries
from leaderboard.site.readout_pages import readout_cards, readout_files
from leaderboard.site.readout_views import ranked_rows
from tests.support.readout_site import SETTING, readout_infos, readout_submissions
from tests.support.site_data import make_data, make_entries, make_settings


@pytest.fixture(scope="module")
def infos():
    return readout_infos()


@pytest.fixture(scope="module")
def submissions():
    return readout_submissions()


@pytest.fixture(scope="module")
def files(infos, submissions):
    return readout_files(infos, submissions)


def _with_mae(entry: ReadoutEntry, row_id: str, mean, low, high, at: str = "") -> ReadoutEntry:
    report = copy.deepcopy(entry.report)
    report["representations"][0]["summary"]["mae_controlled"].update(mean=mean, low=low, high=high)
    return ReadoutEntry(row_id, entry.setting_id, row_id, "submission", report, submitted_at=at)


def test_every_readout_setting_has_its_pages_and_every_row_its_report(infos, submissions, files):
    assert {i.setting_id for i in infos} == {"door-readout-v1", "stack-readout-v1", "door-readout-v2",
                                             "stack-readout-v2"}
    for info in infos:
        document = json.loads(files[f"settings/{info.setting_id}.json"])
        names = [row["display_name"] for row in document["reference_rows"]]
        assert names == [rep["name"] for rep in info.reference["representations"]]
        for row in document["rows"] + document["reference_rows"]:
            assert f"reports/{row['row_id']}.html" in files and f"reports/{row['row_id']}.json" in files
    door = json.loads(files[f"settings/{SETTING}.json"])
    assert [row["row_id"] for row in door["rows"]] == [e.row_id for e in submissions]


def test_reference_rows_carry_the_reference_reports_numbers(infos, files):
    for info in infos:
        document = json.loads(files[f"settings/{info.setting_id}.json"])
        by_name = {row["display_name"]: row for row in document["reference_rows"]}
        for rep in info.reference["representations"]:
            for metric in ("mae_natural", "mae_controlled", "gain", "gain_error", "context_sensitivity"):
                block = rep["summary"][metric]
                got = by_name[rep["name"]]["summary"][metric]
                assert (got["mean"], got["low"], got["high"]) == (block["mean"], block["low"], block["high"])
        html = files[f"settings/{info.setting_id}.html"].decode()
        first = info.reference["representations"][0]["summary"]["mae_controlled"]
        assert f"{first['mean']:.3f} <span class=\"short\">[{first['low']:.3f}, {first['high']:.3f}]</span>" in html


def test_reference_reports_publish_no_path_and_no_initialization(infos, files):
    for info in infos:
        for entry in reference_entries(info):
            published = json.loads(files[f"reports/{entry.row_id}.json"])
            rep = published["representations"][0]
            assert "source" not in rep and not rep.get("initializations") and not rep.get("curves")
            assert all(t["test_id"].startswith(f"{info.task}/{rep['name']}/") for t in
                       published["primary_tests"]["tests"])
            assert len(published["primary_tests"]["tests"]) == 2
            assert all(rep["name"] in (p["first"], p["second"]) for p in published["paired_differences"])


def test_a_submission_page_says_what_a_constant_readout_scores(files):
    page = files[f"reports/sub-constant.{SETTING}.html"].decode()
    assert "a constant readout also scores 0 here" in page
    assert "Submission by lab &lt;b&gt;" in page and "lab <b>" not in page  # escaped


def test_rows_are_ranked_by_controlled_mae_and_overlapping_intervals_share_a_rank(submissions):
    base = submissions[0]
    rows = ranked_rows([_with_mae(base, "c", 5.0, 4.0, 6.0), _with_mae(base, "a", 1.0, 0.5, 1.5),
                        _with_mae(base, "b", 1.2, 0.9, 2.0), _with_mae(base, "n", None, None, None),
                        _with_mae(base, "d", 5.5, 5.2, 5.8, at="2026")])
    assert [(r.entry.row_id, r.rank) for r in rows] == [("a", 1), ("b", 1), ("c", 3), ("d", 3), ("n", None)]


def test_the_index_links_each_readout_setting(infos, submissions):
    files = build_leaderboard(make_entries(make_data()), make_settings(), readout_settings=infos,
                              readout_entries=submissions)
    index = files["index.html"].decode()
    for info in infos:
        assert f'href="settings/{info.setting_id}.html"' in index
    cards = json.loads(files["index.json"])["readout_settings"]
    assert cards == readout_cards(infos, submissions)
    best = next(c for c in cards if c["setting_id"] == SETTING)["best"]
    assert best["report_html"] == f"reports/{submissions[0].row_id}.html"


def test_contract_errors_name_the_field(infos, submissions):
    with pytest.raises(BrokenContract, match="appears twice"):
        readout_files(infos, [submissions[0], submissions[0]])
    stray = ReadoutEntry("x", "toy-readout-v9", "x", "submission", submissions[0].report)
    with pytest.raises(BrokenContract, match="setting_id 'toy-readout-v9'"):
        readout_files(infos, [stray])
    reference = copy.deepcopy(infos[0].reference)
    reference["representations"][0]["initializations"] = [{"initialization": "confirm-000"}]
    with pytest.raises(BrokenContract, match="per-initialization"):
        ReadoutSettingInfo("door-readout-v1", "door", "v1", "angle", "deg", reference=reference)
    with pytest.raises(BrokenContract, match="field 'row_id'"):
        ReadoutEntry("bad id/", SETTING, "x", "submission", submissions[0].report)
