"""Findings on synthetic reports: each of the four results, the store, and the rendered page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmark_data.registry import Setting, get_setting
from expaudit.errors import DataNotFound, InvalidInput
from leaderboard.findings.measure import compute_findings
from leaderboard.findings.page import compare_range, render_findings, spearman
from leaderboard.findings.paper import TableIRow
from leaderboard.findings.store import (BadReportFile, KeptReports, ReportsNotFound, SettingInfo,
                                        compute_rule_reports, kept_reports, load_store, replace_reports,
                                        write_missing, write_own_base, write_rule_report)
from leaderboard.matrix import SceneTable, TransferData
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
FAST = {"n_shuffles": 200, "n_bootstrap": 100, "seed": 0}
SETTING = SettingInfo(get_setting("stack-replay-k10-a"))
POLICY = SettingInfo(get_setting("stack-policy-k3-orig"))


def _replay_data(k: int = 10, seed: int = 1) -> TransferData:
    """40 states x 5 draws; outcomes per state repeated over draws (camera-blind)."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.2, 0.8, k)
    per_state = (rng.random((k, 40, 5)) < quality[:, None, None]).astype(np.int8)
    outcomes = np.repeat(per_state, 5, axis=1)
    states = np.repeat([f"st{j:02d}" for j in range(40)], 5).astype(object)
    scenes = SceneTable(tuple(f"q{j:03d}" for j in range(200)), states,
                        np.repeat(np.arange(4), 50), np.tile(np.arange(5), 40))
    return TransferData(tuple(f"e{i}" for i in range(k)), scenes, outcomes)


def _rules(data: TransferData) -> dict:
    """A good and a bad assignment of the same two experiences, and a not-computed rule."""
    y = data.success_matrix()
    best, other = (int(i) for i in np.argsort(-y.mean(axis=1))[:2])
    best_works = y[best] >= y[other]
    scenes = np.arange(y.shape[1])
    good, bad = np.zeros_like(y), np.zeros_like(y)
    good[np.where(best_works, best, other), scenes] = 1.0    # best where it works
    bad[np.where(best_works, other, best), scenes] = 1.0     # best exactly where it does not
    return {"raw32": good, "mobilenet_v2": bad, "object_proximity": good * 0.5, "resnet18": "weights missing: set EXPAUDIT_RESNET18_WEIGHTS"}


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reports")
    data = _replay_data()
    compute_rule_reports(directory, SETTING, data, _rules(data), **FAST)
    write_missing(directory, [(POLICY, "image policies are not trained in this release")])
    write_own_base(directory, {"stack-stream": {f"e{i}": 0.9 for i in range(10)}})
    return directory, data


def test_store_round_trip_and_not_computed(store_dir):
    directory, _ = store_dir
    store = load_store(directory)
    rules = {s.rule for s in store.reports}
    assert {"random", "oracle", "best_fixed", "recency", "track_record", "raw32", "mobilenet_v2",
            "object_proximity", "resnet18"} == rules
    resnet = store.get(SETTING.setting_id, "resnet18")
    assert not resnet.computed and "EXPAUDIT_RESNET18_WEIGHTS" in resnet.reason
    assert store.missing[0][0] == POLICY


def test_result1_library_numbers_match_the_matrix(store_dir):
    directory, data = store_dir
    findings = compute_findings(load_store(directory))
    (row,) = findings.library
    y = data.success_matrix()
    random, oracle, fixed = y.mean(), y.max(axis=0).mean(), y.mean(axis=1).max()
    assert row.success_random == pytest.approx(random, abs=1e-6)
    assert row.headroom == pytest.approx(oracle - fixed, abs=1e-6)
    assert row.best_fixed_advantage == pytest.approx((fixed - random) / (oracle - random), abs=1e-6)
    assert row.paper == TableIRow(10, 0.45, 0.82, 0.55, 0.150, 0.20)
    assert row.track_record_advantage is not None


def test_result2_and_3_see_the_good_and_the_bad_assignment(store_dir):
    directory, _ = store_dir
    findings = compute_findings(load_store(directory))
    cases = {c.rule: c for c in findings.visual_cases}
    assert set(cases) == {"raw32", "mobilenet_v2"}
    assert cases["raw32"].gap > 0 > cases["mobilenet_v2"].gap
    assert cases["raw32"].gap_direction == "above" and cases["mobilenet_v2"].gap_direction == "below"
    assert findings.gaps.by_mechanism == {"replay": {"above": 1, "below": 1}}
    assert findings.gaps.cases_with_gap == 2 and findings.gaps.inside_envelope == 0
    conc = findings.concentration
    assert len(conc.large_k_cases) == 2              # visual rules only
    assert {c.rule for c in findings.audited_cases} == {"raw32", "mobilenet_v2", "object_proximity"}
    ratios = [c.concentration_ratio for c in conc.large_k_cases]
    assert conc.ratio_range == (min(ratios), max(ratios))
    assert conc.sign_cases == 3                      # visual and structural
    assert conc.sign_match == sum(bool(c.sign_match) for c in findings.audited_cases)


def test_result4_counts_within_below_pooled(store_dir):
    directory, _ = store_dir
    auroc = compute_findings(load_store(directory)).auroc
    assert len(auroc.cases) == 2
    assert auroc.within_lower == sum(c.within_query_auroc < c.pooled_auroc for c in auroc.cases)
    assert auroc.within_range_k50 is None     # no K = 50 setting in the store


def test_rendered_page_states_paper_figures_and_gaps(store_dir):
    directory, _ = store_dir
    page = render_findings(compute_findings(load_store(directory)), "reports")
    for expected in ("paper Table I", "0.30-0.58", "69 of 91", "62 of 65", "stack-policy-k3-orig",
                     "image policies are not trained in this release", "EXPAUDIT_RESNET18_WEIGHTS",
                     "<svg", "Spearman rho", "1 of 2 (50%) against the paper's 9 of 11"):
        assert expected in page, expected
    assert page.count("<svg") == 3


def test_make_findings_script_renders_from_a_directory(store_dir, tmp_path):
    directory, _ = store_dir
    output = tmp_path / "findings.md"
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "make_findings.py"), "--reports",
                          str(directory), "--output", str(output)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert output.read_text().startswith("# Findings")
    missing = subprocess.run([sys.executable, str(REPO / "scripts" / "make_findings.py"), "--reports",
                              str(tmp_path / "none"), "--output", str(output)],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_compute_of_some_settings_keeps_the_other_settings_reports(store_dir, tmp_path):
    """`--compute --settings` recomputes those settings only (here a sealed one, which is
    recorded as not measured without an audit): the other settings' reports, the settings
    already listed as not measured and the own-base figures stay; an unknown id changes
    nothing."""
    directory, _ = store_dir
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    before = sorted(p.name for p in copy.glob("stack-replay-k10-a__*.json"))
    script = [sys.executable, str(REPO / "scripts" / "make_findings.py"), "--reports", str(copy),
              "--output", str(tmp_path / "findings.md"), "--compute", "--settings"]
    run = subprocess.run([*script, "stack-replay-k10-hidden"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in copy.glob("stack-replay-k10-a__*.json")) == before
    store = load_store(copy)
    reasons = {info.setting_id: reason for info, reason in store.missing}
    assert reasons["stack-policy-k3-orig"] == "image policies are not trained in this release"
    assert reasons["stack-replay-k10-hidden"].startswith("sealed query set")
    assert store.own_base == {"stack-stream": {f"e{i}": 0.9 for i in range(10)}}
    files = {p.name: p.read_bytes() for p in copy.iterdir()}
    unknown = subprocess.run([*script, "no-such-setting"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown setting 'no-such-setting'" in unknown.stderr
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == files


def test_kept_reports_and_their_replacement(store_dir, tmp_path):
    """What a partial compute keeps is read first and changes nothing; the replacement swaps
    the chosen settings' reports, moves a measured setting to 'not measured' without a
    stale own-base entry, and a bad `_missing.json` stops it before any report is lost."""
    directory, _ = store_dir
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    reports = sorted(p.name for p in copy.glob("stack-replay-k10-a__*.json"))
    assert reports
    kept = kept_reports(copy, {"stack-policy-k3-orig"})
    assert kept.missing == () and set(kept.own_base) == {"stack-stream"}
    kept = kept_reports(copy, {"stack-replay-k10-a"})
    assert [info.setting_id for info, _ in kept.missing] == ["stack-policy-k3-orig"]
    assert kept.own_base == {}  # no setting of stack-stream keeps its reports
    assert sorted(p.name for p in copy.glob("stack-replay-k10-a__*.json")) == reports
    assert kept_reports(copy) == kept_reports(tmp_path / "absent", {"x"}) == KeptReports((), {})
    computed = tmp_path / "computed"
    computed.mkdir()
    replace_reports(copy, computed, {"stack-replay-k10-a"},
                    [(SETTING, "matrix incomplete"), *kept.missing], kept.own_base)
    store = load_store(copy)
    assert store.reports == () and store.own_base == {}
    assert [info.setting_id for info, _ in store.missing] == ["stack-replay-k10-a", "stack-policy-k3-orig"]
    bad = tmp_path / "bad"
    shutil.copytree(directory, bad)
    (bad / "_missing.json").write_text(json.dumps([{"setting": POLICY.to_json()}]))
    with pytest.raises(BadReportFile, match=r"_missing\.json: an entry's field 'reason'"):
        kept_reports(bad, {"stack-replay-k10-a"})
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "make_findings.py"), "--reports",
                          str(bad), "--output", str(tmp_path / "f.md"), "--compute", "--settings",
                          "stack-replay-k10-a"], capture_output=True, text=True)
    assert run.returncode == 2 and "field 'reason'" in run.stderr
    assert sorted(p.name for p in bad.glob("stack-replay-k10-a__*.json")) == reports
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bad-")] == []
    alone = subprocess.run([sys.executable, str(REPO / "scripts" / "make_findings.py"), "--reports",
                            str(copy), "--settings", "stack-replay-k10-a"], capture_output=True, text=True)
    assert alone.returncode == 2 and "--settings only applies with --compute" in alone.stderr


def test_store_errors_name_the_file(tmp_path):
    (tmp_path / "s__r.json").write_text("{not json")
    with pytest.raises(BadReportFile, match=r"s__r\.json: not valid JSON \(line 1\)"):
        load_store(tmp_path)
    (tmp_path / "s__r.json").write_text(json.dumps({"status": "done"}))
    with pytest.raises(BadReportFile, match=r"s__r\.json: field 'status' must be .* got 'done'"):
        load_store(tmp_path)
    with pytest.raises(ReportsNotFound, match="report directory .* does not exist"):
        load_store(tmp_path / "absent")
    assert issubclass(BadReportFile, InvalidInput) and issubclass(ReportsNotFound, DataNotFound)
    with pytest.raises(ValueError, match="stack-replay-k10-a/raw32: give exactly one of report and reason"):
        write_rule_report(tmp_path, SETTING, "raw32", None, None)


def test_compare_range_words():
    assert compare_range((0.35, 0.5), (0.30, 0.58)).startswith("inside")
    assert compare_range((0.6, 0.7), (0.30, 0.58)).startswith("entirely above")
    assert compare_range((0.1, 0.2), (0.30, 0.58)).startswith("entirely below")
    assert compare_range((0.2, 0.4), (0.30, 0.58)).startswith("overlaps")
    assert compare_range(None, (0.30, 0.58)).startswith("cannot be compared")


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None
    assert spearman([1, 1, 1], [1, 2, 3]) is None


def test_a_setting_both_missing_and_measured_is_rejected(store_dir, tmp_path):
    directory, _ = store_dir
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    write_missing(copy, [(SETTING, "matrix incomplete")])
    with pytest.raises(ValueError, match=r"settings \['stack-replay-k10-a'\] are listed as not measured"):
        load_store(copy)


def test_the_image_policy_result_is_tested_only_on_audited_policy_settings(store_dir, tmp_path):
    """Without a complete policy matrix the page says 'not tested'; with one it counts its gaps' signs."""
    directory, data = store_dir
    page = render_findings(compute_findings(load_store(directory)), "reports")
    assert "one-directional policy result (all 12 negative) is **not tested** here" in page

    with_policy = tmp_path / "with-policy"
    compute_rule_reports(with_policy, SETTING, data, _rules(data), **FAST)
    policy = SettingInfo(Setting("stack-policy-k10-x", "stack", "policy", 10, "stack-orig"),
                         policy_mechanism=2)
    compute_rule_reports(with_policy, policy, data, _rules(data), **FAST)
    findings = compute_findings(load_store(with_policy))
    significant = [x for x in findings.gaps.significant if x.setting.mechanism == "policy"]
    below = sum(x.gap_direction == "below" for x in significant)
    page = render_findings(findings, "reports")
    assert "**not tested**" not in page
    assert (f"Image-policy settings audited here: stack-policy-k10-x. Below the envelope among their "
            f"{len(significant)} significant cases: {below} of {len(significant)}") in page
    assert below >= 1  # the bad assignment lies below its envelope
    # which policies ran the cells is stored with the reports and cites the protocol
    assert {x.setting.policy_mechanism for x in findings.visual_cases if x.setting.mechanism == "policy"} == {2}
    assert ("- The policies: version 2, trained by the recipe pre-registered in docs/policy_protocol.md "
            in page) and page.count("for 1 setting.") == 1


def test_stored_setting_keeps_its_keys_and_old_stores_load(tmp_path):
    """The "setting" object of a report file keeps its keys, so directories written before load."""
    path = write_rule_report(tmp_path, SettingInfo(get_setting("stack-replay-k10-a"), order=2), "random",
                             None, "not run")
    assert json.loads(path.read_text())["setting"] == {
        "setting_id": "stack-replay-k10-a", "task": "stack", "mechanism": "replay", "k": 10,
        "query_set": "stack-orig", "order": 2}
    old = {"setting": {"setting_id": "door-policy-k3-x", "task": "door", "mechanism": "policy_dr",
                       "k": 3, "query_set": "door-orig", "order": 7},
           "rule": "oracle", "status": "not_computed", "reason": "old", "report": None}
    (tmp_path / "door-policy-k3-x__oracle.json").write_text(json.dumps(old))
    loaded = load_store(tmp_path).get("door-policy-k3-x", "oracle")
    assert loaded.setting.setting.id == "door-policy-k3-x" and loaded.setting.order == 7
    assert (loaded.setting.mechanism, loaded.setting.k, loaded.setting.query_set) == ("policy_dr", 3, "door-orig")
    assert loaded.setting.to_json() == old["setting"]
    old["setting"]["colour"] = "red"
    (tmp_path / "door-policy-k3-x__oracle.json").write_text(json.dumps(old))
    with pytest.raises(BadReportFile, match="field 'setting' is missing or malformed"):
        load_store(tmp_path)
