"""The whole readout audit on a small synthetic bank (tests/support/readout_bank.py)."""

import json

import numpy as np
import pytest

from expaudit.errors import DataNotFound
from leaderboard.errors import InputError
from leaderboard.readout import defaults
from leaderboard.readout.audit import run_readout_audit
from leaderboard.readout.bank import read_bank
from leaderboard.readout.inputs import read_features, read_predictions
from leaderboard.readout.metrics import METRIC_NAMES
from tests.support.readout_bank import write_bank


@pytest.fixture(scope="module")
def bank_files(tmp_path_factory):
    return write_bank(tmp_path_factory.mktemp("readout"))


@pytest.fixture(scope="module")
def report(bank_files):
    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    reps = [read_features(bank_files["weak"], "weak"), read_predictions(bank_files["perfect"], "perfect")]
    return run_readout_audit(bank, reps, split="confirm", n_resamples=300, seed=1, min_estimable=4)


def test_report_layout(report):
    assert report["schema_version"] == defaults.SCHEMA_VERSION == "expaudit-readout-report/1"
    assert report["bank"]["min_separation"] == 5.0 and report["bank"]["unit"] == "deg"
    assert report["inputs"]["n_initializations"] == 6 and report["inputs"]["seed"] == 1
    assert any("latch" in note for note in report["notes"])
    json.dumps(report, allow_nan=False)


def test_weak_features_are_accurate_but_barely_respond(report):
    weak = report["representations"][0]
    assert weak["readout"]["kind"] == "ridge" and weak["readout"]["n_constant_features"] == 1
    s = weak["summary"]
    assert s["mae_natural"]["mean"] < 2.0 < s["mae_controlled"]["mean"]
    assert 0.2 < s["gain"]["mean"] < 0.4 and s["context_sensitivity"]["mean"] > 10.0
    # confirm-1 has one context with both endpoints admitted (tests/support/readout_bank.py)
    assert s["gain"]["n"] == 5
    assert s["gain"]["not_estimable"] == {"1 context with both endpoints admitted, at least 2 are needed": 1}
    assert set(s) == set(METRIC_NAMES)


def test_perfect_predictions_and_the_holm_family(report):
    perfect = report["representations"][1]["summary"]
    assert perfect["gain"]["mean"] == pytest.approx(1.0) and perfect["gain_error"]["mean"] < 1e-9
    tests = {t["test_id"]: t for t in report["primary_tests"]["tests"]}
    assert report["primary_tests"]["family"] == list(tests)
    weak = tests["door/weak/gain_below_one"]
    assert (weak["n_positive"], weak["n_negative"], weak["n_not_estimable"]) == (5, 0, 1)
    assert weak["p_value"] == 0.5 ** 5
    assert weak["p_holm"] == 2 * 0.5 ** 5  # two defined tests of equal p in the family
    assert tests["door/perfect/gain_below_one"]["p_value"] is None  # every difference a tie


def test_estimability_gate(bank_files):
    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    gated = run_readout_audit(bank, [read_features(bank_files["weak"], "weak")], n_resamples=50, min_estimable=6)
    tests = gated["primary_tests"]["tests"]
    assert [t["p_value"] for t in tests] == [None, None] and [t["p_holm"] for t in tests] == [None, None]
    assert tests[0]["reason"] == "not run: 5 initializations with an estimable gain, the protocol needs 6"
    assert tests[0]["n_positive"] == 5  # the counts are still reported
    assert gated["inputs"]["min_estimable"] == 6


def test_not_computed_representations_stay_in_the_family(bank_files):
    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    out = run_readout_audit(bank, [read_features(bank_files["weak"], "weak")], n_resamples=50, min_estimable=4,
                            not_computed=["policy/e000"])
    tests = {t["test_id"]: t for t in out["primary_tests"]["tests"]}
    assert len(out["primary_tests"]["family"]) == 4
    assert tests["door/policy/e000/gain_below_one"]["p_value"] == 1.0
    assert tests["door/weak/gain_below_one"]["p_holm"] == 4 * 0.5 ** 5  # Holm over 4, not 2


def test_curves_and_paired_differences(report):
    weak = report["representations"][0]
    assert [c["initialization"] for c in weak["curves"]] == ["confirm-0", "confirm-1", "confirm-2"]
    first = weak["curves"][0]["contexts"]
    assert [c["context"] for c in first] == [0, 1, 2, 3]
    assert first[3]["grid_index"] == [0, 1, 3, 4, 5]  # (3, 2) was not admitted
    pair = report["paired_differences"][0]
    assert (pair["first"], pair["second"]) == ("weak", "perfect")
    assert pair["metrics"]["gain"]["mean"] == pytest.approx(report["representations"][0]["summary"]["gain"]["mean"] - 1.0)


def test_failure_predictors_run_per_policy(report):
    block = report["representations"][0]["failure_prediction"]
    assert block["reason"] is None
    door = block["policies"]["door-bc"]
    assert door["n_dev_rows"] == 16 and door["n_eval_rows"] == 20
    assert set(door["models"]) == {"M0", "MC", "MGR", "MCGR"}


def test_same_seed_same_report(bank_files, report):
    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    reps = [read_features(bank_files["weak_shards"], "weak"), read_predictions(bank_files["perfect"], "perfect")]
    again = run_readout_audit(bank, reps, split="confirm", n_resamples=300, seed=1, min_estimable=4)
    a = again["representations"][0]["summary"]["gain"]
    b = report["representations"][0]["summary"]["gain"]
    assert a["mean"] == pytest.approx(b["mean"], abs=1e-3)  # float32 shards against float64 Parquet


def test_without_sealed_labels(bank_files):
    bank = read_bank(bank_files["bank"])
    reps = [read_features(bank_files["weak"], "weak")]
    with pytest.raises(DataNotFound, match="no labels for the confirm split"):
        run_readout_audit(bank, reps, split="confirm")
    dev = run_readout_audit(bank, reps, split="dev", n_resamples=100)
    assert dev["primary_tests"]["confirmatory"] is False
    assert dev["representations"][0]["failure_prediction"]["reason"] == (
        "no labels for the eval initializations: pass the sealed labels file")


def test_missing_feature_row_is_named(bank_files, tmp_path):
    import pandas as pd

    frame = pd.read_parquet(bank_files["weak"])
    train = bank_files["labels"].query("split == 'train' and kind == 'natural'")["observation_id"].iloc[3]
    frame[frame["observation_id"] != train].to_parquet(tmp_path / "cut.parquet", index=False)
    bank = read_bank(bank_files["bank"])
    with pytest.raises(InputError, match=f"cut.parquet, field 'observation_id': value '{train}' has no row "
                                         "for a train natural observation"):
        run_readout_audit(bank, [read_features(tmp_path / "cut.parquet", "cut")], split="dev")
    assert np.isfinite(frame.filter(like="f").to_numpy()).all()


def test_natural_mae_by_source_splits_the_same_readouts_errors(bank_files):
    """Amendment 1: with frames from several sources, each source's natural MAE of the same
    predictions, per initialization (hand-made errors: 1 on the expert's frames, 3 on a policy's)."""
    from dataclasses import replace

    import pandas as pd

    from leaderboard.readout.assemble import natural_mae_by_source

    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    labels = bank.labels.copy()
    natural = labels.index[(labels["kind"] == "natural") & (labels["split"] == "confirm")]
    policy = natural[::2]
    labels.loc[policy, "source"] = "policy/x"
    mixed = replace(bank, labels=labels)
    offset = np.where(labels.index.isin(policy), 3.0, 1.0)
    predictions = pd.Series(labels["coordinate"].to_numpy() + offset, index=labels["observation_id"].to_numpy())
    by_source = natural_mae_by_source(mixed, predictions, "confirm")
    n_inits = labels.loc[natural, "initialization"].nunique()
    assert sorted(by_source) == ["expert", "policy/x"]
    assert by_source["expert"] == pytest.approx([1.0] * len(by_source["expert"]))
    assert by_source["policy/x"] == pytest.approx([3.0] * n_inits)
    assert natural_mae_by_source(bank, predictions, "confirm") == {}  # one source: nothing to split
    assert report_has_no_split(bank_files)


def report_has_no_split(bank_files) -> bool:
    bank = read_bank(bank_files["bank"], bank_files["sealed"])
    report = run_readout_audit(bank, [read_predictions(bank_files["perfect"], "perfect")], split="confirm",
                               n_resamples=50, seed=1, min_estimable=4)
    return report["representations"][0]["natural_mae_by_source"] == {}
