"""`run_readout_audit`: a bank and representations in, the readout report (a dict) out.

For each representation: predictions (the spec's ridge readout on features, or the submitted
predictions), the per-initialization metrics of the audited split, their summaries, both
primary sign tests, and the failure predictors per published policy when the bank has
outcomes and the dev and evaluation labels. The primary tests of every representation in
the report form one Holm family; every pair of representations gets paired differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from expaudit.errors import DataNotFound
from leaderboard.errors import BadArgument
from leaderboard.readout import defaults
from leaderboard.readout.assemble import covariates, curves, natural_mae_by_source, predict, split_metrics
from leaderboard.readout.bank import GRIPPER_DISTANCE, SPLITS, Bank
from leaderboard.readout.inputs import Representation
from leaderboard.readout.metrics import METRIC_NAMES, InitializationMetrics
from leaderboard.readout.predictors import FailurePrediction, Outcome, failure_prediction
from leaderboard.readout.report import build_report
from leaderboard.readout.sign_tests import HYPOTHESES, SignTest, holm_family, primary_tests
from leaderboard.readout.summaries import Summary, paired_difference, summarize, summarize_values


@dataclass(frozen=True)
class RepresentationResult:
    """Everything the report says about one representation."""

    name: str
    kind: str
    source: str
    readout: dict
    metrics: list[InitializationMetrics]
    summaries: dict[str, Summary]
    curves: list[dict]
    failure_prediction: dict[str, FailurePrediction]
    failure_reason: str | None
    natural_by_source: dict[str, Summary]
    """Natural MAE of the same readout on each source's frames alone (empty with one source)."""


def _failure(bank: Bank, predictions, n_resamples: int, seed: int, split_cache: dict):
    """Failure prediction per policy, or (empty, reason) when the bank cannot support it."""
    if bank.outcomes is None:
        return {}, "the bank has no outcomes.parquet"
    labelled = bank.labelled_splits()
    for split, hint in (("dev", ""), ("eval", ": pass the sealed labels file")):
        if split not in labelled:
            return {}, f"no labels for the {split} initializations{hint}"
    if GRIPPER_DISTANCE not in bank.labels.columns:
        return {}, f"the natural labels lack the '{GRIPPER_DISTANCE}' column"
    cov = {split: covariates(bank, predictions, split, split_cache[split]) for split in ("dev", "eval")}
    split_of = {m.initialization: split for split in ("dev", "eval") for m in split_cache[split]}
    out = {}
    for policy, runs in sorted(bank.outcomes.groupby("policy"), key=lambda item: item[0]):
        rows = {"dev": [], "eval": []}
        for run in runs.itertuples(index=False):
            split = split_of.get(run.initialization)
            if split is not None:
                rows[split].append(Outcome(run.initialization, int(run.seed), not bool(run.success)))
        out[str(policy)] = failure_prediction(cov["dev"], rows["dev"], cov["eval"], rows["eval"],
                                              n_resamples=n_resamples, seed=seed)
    return out, None


def audit_representation(bank: Bank, rep: Representation, split: str, *, n_resamples: int, seed: int,
                         n_curves: int = defaults.CURVE_INITIALIZATIONS) -> RepresentationResult:
    """One representation's predictions, metrics, summaries, curves and failure predictors."""
    predictions, readout = predict(bank, rep)
    metrics = split_metrics(bank, rep, predictions, split)
    summaries = {name: summarize(metrics, name, n_resamples=n_resamples, seed=seed) for name in METRIC_NAMES}
    shown = [m.initialization for m in metrics if m.n_cells][:n_curves]
    cache = {split: metrics}
    if bank.outcomes is not None and {"dev", "eval"} <= set(bank.labelled_splits()):
        for other in ("dev", "eval"):
            if other not in cache:  # the failure predictors need dev and eval metrics
                cache[other] = split_metrics(bank, rep, predictions, other)
    failure, reason = _failure(bank, predictions, n_resamples, seed, cache)
    by_source = {source: summarize_values("mae_natural", values, n_resamples=n_resamples, seed=seed)
                 for source, values in natural_mae_by_source(bank, predictions, split).items()}
    return RepresentationResult(rep.name, rep.kind, rep.source, readout, metrics, summaries,
                                curves(bank, predictions, split, shown), failure, reason, by_source)


def run_readout_audit(bank: Bank, representations: Sequence[Representation], *, split: str = "confirm",
                      n_resamples: int = defaults.N_BOOTSTRAP, seed: int = defaults.SEED,
                      min_estimable: int = defaults.MIN_ESTIMABLE_INITIALIZATIONS,
                      not_computed: Sequence[str] = ()) -> dict:
    """The readout report of `representations` on `split` of `bank` (schema `SCHEMA_VERSION`).

    The primary tests are not run (p null, with the reason) when fewer than `min_estimable`
    initializations have an estimable gain: the protocol's estimability gate. Each name in
    `not_computed` (a representation of the published family that could not run) keeps its
    two tests in the Holm family with p = 1, so the family is never shrunk.
    """
    if split not in SPLITS or split == "train":
        raise BadArgument(f"split: must be one of dev, confirm, eval, got '{split}'")
    if not representations:
        raise BadArgument("representations: at least one is needed")
    names = [rep.name for rep in representations]
    if len(set(names)) != len(names):
        raise BadArgument(f"representations: a name appears twice in {names}")
    if split not in bank.labelled_splits():
        raise DataNotFound(f"{bank.source}: no labels for the {split} split (its labels are sealed: "
                           f"pass the sealed labels file)")
    results = [audit_representation(bank, rep, split, n_resamples=n_resamples, seed=seed)
               for rep in representations]
    tests: list[SignTest] = []
    for result in results:
        tests.extend(primary_tests(f"{bank.info.task}/{result.name}", result.metrics))
    n_estimable = sum(m.gain.value is not None for m in results[0].metrics)  # the grid's, same for all
    if n_estimable < min_estimable:
        gate = (f"not run: {n_estimable} initializations with an estimable gain, the protocol needs "
                f"{min_estimable}")
        tests = [replace(t, p_value=None, reason=gate) for t in tests]
    for name in not_computed:
        for key, hypothesis in HYPOTHESES.items():
            tests.append(SignTest(f"{bank.info.task}/{name}/{key}", hypothesis, 0, 0, 0, 0, 1.0,
                                  "representation not computed: kept in the family with p = 1"))
    tests = holm_family(tests)
    differences = [
        {"first": a.name, "second": b.name,
         "metrics": {name: paired_difference(a.metrics, b.metrics, name, n_resamples=n_resamples,
                                             seed=seed).to_dict() for name in METRIC_NAMES}}
        for i, a in enumerate(results) for b in results[i + 1:]
    ]
    inputs = {"split": split, "seed": seed, "n_bootstrap": n_resamples, "confidence": defaults.CONFIDENCE,
              "ridge_lambda": defaults.RIDGE_LAMBDA, "min_contexts": defaults.MIN_CONTEXTS,
              "logistic_c": defaults.LOGISTIC_C, "min_estimable": min_estimable,
              "sealed_labels_read": bank.sealed_read,
              "n_initializations": int(np.unique(bank.labels.loc[bank.labels["split"] == split,
                                                                 "initialization"]).size)}
    return build_report(bank.info, inputs, results, tests, differences)
