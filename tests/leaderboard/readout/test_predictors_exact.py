"""The failure predictors to the exact value: each model is the logistic fit of its own
columns on the dev rows, scored on the evaluation rows; the differences' intervals resample
evaluation initializations with all their seeds; every row left out is counted by reason; the
dev gate is at exactly 3 failures and 3 successes."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.logistic import brier, fit_logistic, log_loss
from leaderboard.readout.predictors import (COVARIATES, MODELS, Covariates, Difference, FailurePrediction, Outcome,
                                            failure_prediction)


def _set(prefix, n, seed):
    rng = np.random.default_rng(seed)
    covs, outs = [], []
    for i in range(n):
        values = rng.normal(size=6) + [1.0, 20.0, 300.0, 3.0, 0.7, 5.0]
        covs.append(Covariates(f"{prefix}{i}", *values))
        risk = values[3] - 3.0 + 0.5 * rng.normal()
        for s in (0, 1):
            outs.append(Outcome(f"{prefix}{i}", s, bool(risk + 0.8 * rng.normal() > 0.3)))
    return covs, outs


def _matrix(covs, outs):
    by = {c.initialization: c for c in covs}
    x = np.array([[getattr(by[o.initialization], n) for n in COVARIATES] for o in outs])
    return x, np.array([float(o.failure) for o in outs]), [o.initialization for o in outs]


def _interval(delta, ids, n, seed):
    clusters, index = np.unique(np.asarray(ids), return_inverse=True)
    sums = np.array([delta[index == k].sum() for k in range(len(clusters))])
    sizes = np.array([(index == k).sum() for k in range(len(clusters))], dtype=float)
    draw = np.random.default_rng(seed).integers(0, len(clusters), size=(n, len(clusters)))
    ratios = sums[draw].sum(axis=1) / sizes[draw].sum(axis=1)
    return tuple(float(v) for v in np.percentile(ratios, [2.5, 97.5]))


@pytest.fixture(scope="module")
def data():
    return _set("d", 16, 0), _set("e", 24, 1)


def test_every_model_is_its_columns_fit_on_dev_and_scored_on_eval(data):
    (dev, dev_out), (ev, ev_out) = data
    result = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=300, seed=2)
    xd, yd, _ = _matrix(dev, dev_out)
    xe, ye, ids = _matrix(ev, ev_out)
    assert result.reason is None and list(result.models) == ["M0", "MC", "MGR", "MCGR"]
    losses = {}
    for name, covariates in MODELS.items():
        cols = [COVARIATES.index(c) for c in covariates]
        fitted = fit_logistic(xd[:, cols], yd)
        p = fitted.probability(xe[:, cols])
        losses[name] = {"brier": brier(p, ye), "log_loss": log_loss(p, ye)}
        assert result.models[name] == {"covariates": list(covariates), "intercept": fitted.intercept,
                                       "coefficients": [float(v) for v in fitted.coefficients],
                                       "brier": float(np.mean(losses[name]["brier"])),
                                       "log_loss": float(np.mean(losses[name]["log_loss"]))}
    expected = []
    for first, second in (("MC", "M0"), ("MGR", "M0"), ("MGR", "MC")):
        for loss in ("brier", "log_loss"):
            delta = losses[first][loss] - losses[second][loss]
            expected.append(Difference(first, second, loss, float(np.mean(delta)), *_interval(delta, ids, 300, 2)))
    assert [d.first for d in result.differences] == [d.first for d in expected]
    for got, want in zip(result.differences, expected):
        assert (got.first, got.second, got.loss) == (want.first, want.second, want.loss)
        assert got.mean == pytest.approx(want.mean, rel=1e-12, abs=1e-15)
        assert (got.low, got.high) == pytest.approx((want.low, want.high), rel=1e-12, abs=1e-15)
    assert (result.n_dev_rows, result.n_eval_rows, result.n_eval_initializations) == (32, 48, 24)
    assert result.left_out == {}


def test_the_defaults_are_2000_resamples_seed_0(data):
    (dev, dev_out), (ev, ev_out) = data
    assert failure_prediction(dev, dev_out, ev, ev_out) == failure_prediction(dev, dev_out, ev, ev_out,
                                                                              n_resamples=2000, seed=0)


def test_rows_left_out_are_counted_by_reason_and_split(data):
    (dev, dev_out), (ev, ev_out) = data
    dev = [Covariates(**{**c.__dict__, "gain": None}) if c.initialization == "d0" else c for c in dev]
    ev = [Covariates(**{**c.__dict__, "mae_controlled": None}) if c.initialization == "e3" else c for c in ev]
    ev_out = ev_out + [Outcome("e99", 0, True)]
    result = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=50)
    assert result.left_out == {"dev: gain not estimable": 2, "eval: mae_controlled not estimable": 2,
                               "eval: no covariates for the initialization": 1}
    assert (result.n_dev_rows, result.n_eval_rows, result.n_eval_initializations) == (30, 46, 23)
    assert result.to_dict()["left_out"] == dict(sorted(result.left_out.items()))


def test_the_dev_gate_is_three_of_each(data):
    (dev, _), (ev, ev_out) = data
    three = [Outcome(c.initialization, 0, i < 3) for i, c in enumerate(dev)]
    assert failure_prediction(dev, three, ev, ev_out, n_resamples=20).reason is None
    two = [Outcome(c.initialization, 0, i < 2) for i, c in enumerate(dev)]
    r = failure_prediction(dev, two, ev, ev_out, n_resamples=20)
    assert r.reason == ("not fitted: the dev runs hold 2 failures and 14 successes, at least 3 of each "
                        "are needed")
    assert (r.models, r.differences, r.n_dev_rows, r.n_eval_rows) == ({}, (), 16, 48)
    few_successes = [Outcome(c.initialization, 0, i >= 2) for i, c in enumerate(dev)]
    assert failure_prediction(dev, few_successes, ev, ev_out, n_resamples=20).reason == (
        "not fitted: the dev runs hold 14 failures and 2 successes, at least 3 of each are needed")


def test_no_usable_rows_say_which_split(data):
    (dev, dev_out), (ev, ev_out) = data
    assert failure_prediction(dev, [], ev, ev_out).reason == "no usable dev rows"
    r = failure_prediction(dev, dev_out, ev, [])
    assert r.reason == "no usable evaluation rows" and r.n_dev_rows == 32 and r.n_eval_rows == 0


def test_one_evaluation_initialization_gives_no_interval(data):
    (dev, dev_out), (ev, ev_out) = data
    only = [o for o in ev_out if o.initialization == "e0"]
    r = failure_prediction(dev, dev_out, ev, only, n_resamples=50)
    assert r.n_eval_initializations == 1
    assert all(d.low is None and d.high is None for d in r.differences)


def test_twice_the_same_initialization_is_refused_by_split(data):
    (dev, dev_out), (ev, ev_out) = data
    with pytest.raises(BadArgument, match="^dev covariates: initialization 'd0' appears twice$"):
        failure_prediction(dev + dev[:1], dev_out, ev, ev_out)
    with pytest.raises(BadArgument, match="^eval covariates: initialization 'e1' appears twice$"):
        failure_prediction(dev, dev_out, ev + ev[1:2], ev_out)


def test_the_dictionaries_are_the_reports():
    d = Difference("MGR", "MC", "brier", -0.1, -0.2, 0.05)
    assert d.to_dict() == {"comparison": "MGR - MC", "loss": "brier", "mean": -0.1, "low": -0.2, "high": 0.05}
    f = FailurePrediction("why", {"M0": {}}, (d,), 3, 4, 2, {"b": 1, "a": 2})
    assert f.to_dict() == {"reason": "why", "models": {"M0": {}}, "differences": [d.to_dict()], "n_dev_rows": 3,
                           "n_eval_rows": 4, "n_eval_initializations": 2, "left_out": {"a": 2, "b": 1}}
    assert list(f.to_dict()["left_out"]) == ["a", "b"]
    c = Covariates("s", 1.0, None, 2.0, None, 0.5, 1.0)
    assert c.missing() == "initial_coordinate"
    assert Covariates("s", 1.0, 1.0, 2.0, 1.0, 0.5, 1.0).missing() is None
