"""Failure predictors: the logistic fit and M0 against MC on a problem built for MC to win."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.logistic import _sigmoid, brier, fit_logistic, log_loss
from leaderboard.readout.predictors import Covariates, Outcome, failure_prediction


def test_fit_solves_the_penalised_score_equation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3)) * [1.0, 10.0, 0.1] + [0.0, 50.0, 2.0]
    y = (rng.uniform(size=60) < _sigmoid(x[:, 0] - 0.1 * (x[:, 1] - 50))).astype(float)
    model = fit_logistic(x, y, c=1.0)
    z = (x - model.mean) / model.scale
    p = model.probability(x)
    np.testing.assert_allclose(z.T @ (p - y) + model.coefficients, 0.0, atol=1e-8)
    assert abs(np.sum(p - y)) < 1e-8  # unpenalised intercept


def test_separable_outcomes_keep_finite_coefficients():
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = fit_logistic(x, np.array([0.0, 0.0, 1.0, 1.0]))
    assert np.isfinite(model.coefficients).all() and model.probability(x)[0] < 0.5 < model.probability(x)[3]
    with pytest.raises(BadArgument, match="all 1, a logistic model needs both outcomes"):
        fit_logistic(x, np.ones(4))


def test_losses_by_hand():
    np.testing.assert_allclose(brier(np.array([0.2, 0.9]), np.array([0.0, 0.0])), [0.04, 0.81])
    np.testing.assert_allclose(log_loss(np.array([0.5, 0.0]), np.array([1.0, 1.0])), [np.log(2), -np.log(1e-15)])


def synthetic(n, seed, prefix):
    """Failure driven by mae_controlled; the M0 covariates are noise."""
    rng = np.random.default_rng(seed)
    covs, outcomes = [], []
    for i in range(n):
        mae_c = rng.uniform(0, 10)
        covs.append(Covariates(f"{prefix}{i}", rng.normal(), rng.normal(), rng.normal(), mae_c, rng.normal(),
                               rng.normal()))
        for seed_ in (0, 1):
            outcomes.append(Outcome(f"{prefix}{i}", seed_, bool(rng.uniform() < _sigmoid(1.5 * (mae_c - 5)))))
    return covs, outcomes


def test_mc_beats_m0_when_failure_follows_controlled_error():
    dev, dev_out = synthetic(40, 1, "d")
    ev, ev_out = synthetic(80, 2, "e")
    result = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=500, seed=0)
    assert result.reason is None and result.n_eval_rows == 160 and result.n_eval_initializations == 80
    assert result.models["MC"]["brier"] < result.models["M0"]["brier"]
    assert result.models["MC"]["log_loss"] < result.models["M0"]["log_loss"]
    by = {(d.first, d.second, d.loss): d for d in result.differences}
    assert set(by) == {(a, b, loss) for a, b in (("MC", "M0"), ("MGR", "M0"), ("MGR", "MC"))
                       for loss in ("brier", "log_loss")}
    mc = by[("MC", "M0", "brier")]
    assert mc.mean == pytest.approx(result.models["MC"]["brier"] - result.models["M0"]["brier"])
    assert mc.high < 0  # the interval excludes 0: MC is better
    again = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=500, seed=0)
    assert again.to_dict() == result.to_dict()


def test_rows_with_unknown_covariates_are_left_out_and_counted():
    dev, dev_out = synthetic(20, 3, "d")
    ev, ev_out = synthetic(10, 4, "e")
    ev[0] = Covariates("e0", 0.0, 0.0, 0.0, None, 1.0, 1.0)
    result = failure_prediction(dev, dev_out, ev, ev_out, n_resamples=100)
    assert result.left_out == {"eval: mae_controlled not estimable": 2}
    assert result.n_eval_rows == 18


def test_failure_link_gate():
    dev, dev_out = synthetic(5, 3, "d")
    dev_out = [Outcome(o.initialization, o.seed, False) for o in dev_out]
    ev, ev_out = synthetic(5, 4, "e")
    result = failure_prediction(dev, dev_out, ev, ev_out)
    assert result.reason == ("not fitted: the dev runs hold 0 failures and 10 successes, at least 3 of each "
                             "are needed")
