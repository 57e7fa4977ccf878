"""What a readout submission's report may say: the confirm summary, nothing per initialization.

The engine's report on a sealed split holds per-initialization values, curves (prediction
against the actual coordinate of three initializations) and the failure predictors scored
on the `eval` labels: whoever reads them learns sealed labels. A submission's served
report (schema `SCHEMA_VERSION`) keeps, for its one representation: the readout's
description, each metric's mean and 95% interval over the confirm initializations rounded
to `DECIMALS` places (the digits the offline command prints), the counts behind them, the
count of constant-readout initializations, and the two primary sign tests (counts and
p-values). Everything else is dropped; docs/readout.md ("What a submission's report
reveals") gives the bound on what repeated submissions learn.
"""

from __future__ import annotations

SCHEMA_VERSION = "expaudit-readout-submission/1"
DECIMALS = 3
"""Places of every served mean and interval bound: the printed digits of `expaudit readout audit`."""
SUMMARY_KEYS = ("metric", "mean", "low", "high", "n", "reason", "interval_reason", "not_estimable")
ROUNDED = ("mean", "low", "high")
INPUT_KEYS = ("split", "seed", "n_bootstrap", "confidence", "ridge_lambda", "min_contexts", "min_estimable",
              "n_initializations")
TEST_KEYS = ("test_id", "hypothesis", "n_positive", "n_negative", "n_ties", "n_not_estimable", "p_value",
             "p_holm", "reason")
NOT_SERVED = ("not served for submissions: the failure predictors are scored on the sealed evaluation "
              "labels (docs/readout.md)")


def _round(value):
    return None if value is None else round(float(value), DECIMALS)


def _summary(block: dict) -> dict:
    out = {key: block.get(key) for key in SUMMARY_KEYS}
    for key in ROUNDED:
        out[key] = _round(out[key])
    return out


def _representation(rep: dict) -> dict:
    constant = rep.get("constant_readout") or {}
    return {"name": rep["name"], "input": rep["input"], "readout": rep["readout"],
            "summary": {metric: _summary(block) for metric, block in rep["summary"].items()},
            "constant_readout": {"count": len(constant.get("initializations") or []),
                                 "note": constant.get("note")},
            "initializations": [], "curves": [],
            "failure_prediction": {"reason": NOT_SERVED, "policies": {}}}


def served_readout_report(report: dict, setting_id: str) -> dict:
    """The served form of the engine's report of one submission on `setting_id`."""
    tests = report["primary_tests"]
    return {
        "schema_version": SCHEMA_VERSION,
        "setting": setting_id,
        "bank": report["bank"],
        "inputs": {key: report["inputs"].get(key) for key in INPUT_KEYS},
        "notes": list(report["notes"]) + [
            "Served report: the confirm summary only; per-initialization values, curves and failure "
            "predictors are not served, and means and intervals are rounded to "
            f"{DECIMALS} decimal places."],
        "representations": [_representation(rep) for rep in report["representations"]],
        "paired_differences": [],
        "primary_tests": {"adjustment": tests["adjustment"], "confirmatory": tests["confirmatory"],
                          "family": list(tests["family"]),
                          "tests": [{key: t.get(key) for key in TEST_KEYS} for t in tests["tests"]]},
    }
