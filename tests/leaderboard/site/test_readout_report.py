"""The readout report page and its figures, from hand-made report dicts."""

from leaderboard.site.readout_figures import RepresentationPoint, accuracy_gain_figure, response_figure
from leaderboard.site.readout_report import CONSTANT_BESIDE, render_readout_html, render_readout_summary

METRICS = ("mae_natural", "mae_controlled", "gain", "gain_error", "context_sensitivity", "slope")


def _summary(mean, reason=None):
    return {"mean": mean, "low": None if mean is None else mean - 0.1, "high": None if mean is None else mean + 0.1,
            "n": 0 if mean is None else 4, "reason": reason, "interval_reason": None,
            "not_estimable": {} if reason is None else {reason: 4}}


def _report(name="<b>rep</b>", gain=0.3):
    reason = None if gain is not None else "1 admitted context, at least 2 are needed"
    return {
        "schema_version": "expaudit-readout-report/1",
        "bank": {"task": "door", "coordinate": "hinge angle", "unit": "deg", "version": "v1", "min_separation": 5.0},
        "inputs": {"split": "dev", "n_initializations": 4, "n_bootstrap": 100, "seed": 0},
        "notes": ["a <note>"],
        "representations": [{
            "name": name, "readout": {"kind": "ridge", "lambda": 0.001, "n_train": 10, "n_features": 3,
                                      "n_constant_features": 0},
            "summary": {m: _summary(None if gain is None and m != "mae_natural" else 1.0 if m != "gain" else gain,
                                    reason if m != "mae_natural" else None) for m in METRICS},
            "constant_readout": {"initializations": ["s1"], "note": "constant readout: it does not move"},
            "initializations": [], "curves": [],
            "failure_prediction": {"reason": "the bank has no outcomes.parquet", "policies": {}},
        }],
        "paired_differences": [],
        "primary_tests": {"confirmatory": False, "family": [f"door/{name}/gain_below_one"], "tests": [
            {"test_id": f"door/{name}/gain_below_one", "hypothesis": "gain[s] < 1", "n_positive": 4,
             "n_negative": 0, "n_ties": 0, "n_not_estimable": 0, "p_value": 0.0625, "p_holm": 0.0625,
             "reason": None}]},
    }


def test_page_escapes_and_says_the_constant_readout_note_beside_gain_and_sensitivity():
    page = render_readout_html(_report())
    assert "<b>rep</b>" not in page and "&lt;b&gt;rep&lt;/b&gt;" in page and "a &lt;note&gt;" in page
    assert page.count(CONSTANT_BESIDE) == 2
    assert "Constant readout on 1 initialization(s) (s1)" in page
    assert "not confirmatory" in page and "Not computed: the bank has no outcomes.parquet." in page


def test_null_numbers_show_their_reason_never_zero():
    page = render_readout_html(_report(gain=None))
    assert "n/a (no estimable" not in page
    assert "n/a (1 admitted context, at least 2 are needed)" in page
    assert "no representation has both numbers" in page


def test_representation_with_slashes_in_its_name():
    page = render_readout_html(_report(name="policy/exp-1"))
    assert "<td>policy/exp-1</td>" in page


def test_figures():
    curve = {"initialization": "s0", "contexts": [
        {"context": 0, "grid_index": [0, 5], "coordinate": [0.0, 50.0], "prediction": [10.0, 20.0]},
        {"context": 1, "grid_index": [0, 5], "coordinate": [0.5, 49.0], "prediction": [30.0, 40.0]}]}
    svg = response_figure(curve, "deg", "t")
    assert svg.count("<circle") == 4 and 'role="img"' in svg and "context 1: q 0.5, prediction 30" in svg
    empty = response_figure({"contexts": []}, "deg", "t")
    assert "no admitted controlled cell" in empty
    points = [RepresentationPoint("a", 1.0, 0.5, 1.5, 0.2, 0.1, 0.3), RepresentationPoint("b", None, None, None,
                                                                                         None, None, None)]
    scatter = accuracy_gain_figure(points, "deg", "t")
    assert "a: natural MAE 1, gain 0.2" in scatter and "gain 1" in scatter


def test_terminal_summary():
    text = render_readout_summary(_report(name="r"))
    assert text.splitlines()[0].startswith("r: natural MAE 1.000 deg")
    assert "door/r/gain_below_one (gain[s] < 1): 4 of 4, p = 0.0625, Holm 0.0625" in text


def test_the_tests_section_names_a_family_wider_than_the_report():
    report = _report(name="r")
    assert "Holm-adjusted over the 1 tests of this report" in render_readout_html(report)
    report["primary_tests"].update(family=report["primary_tests"]["family"] + ["stack/r/gain_below_one"],
                                   family_size=2, family_scope="both tasks")
    page = render_readout_html(report)
    assert "Holm-adjusted over a family of 2 tests (both tasks), 1 of them in this report" in page


def test_natural_mae_by_source_has_its_table_only_when_the_bank_has_several_sources():
    assert "Natural MAE by source" not in render_readout_html(_report())
    report = _report()
    report["representations"][0]["natural_mae_by_source"] = {"expert": _summary(1.5), "policy/<x>": _summary(2.25)}
    page = render_readout_html(report)
    assert "Natural MAE by source" in page
    assert "<td>expert</td>" in page and "<td>policy/&lt;x&gt;</td>" in page and "2.250" in page
