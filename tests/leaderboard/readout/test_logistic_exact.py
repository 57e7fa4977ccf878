"""The failure predictors' logistic fit is the penalised optimum: at the returned coefficients
the gradient of `sum logloss + ||w||^2 / (2C)` (intercept unpenalised) is zero; its losses
to the exact value; the words of every refusal."""

import math

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.logistic import brier, fit_logistic, log_loss


def _data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.normal(3.0, 2.0, n), rng.normal(-1.0, 0.5, n), rng.normal(size=n)])
    y = (x[:, 0] + rng.normal(0, 2.0, n) > 3.0).astype(float)
    return x, y


def _gradient(model, x, y, c):
    """The penalised objective's gradient at the model, on its own standardised design."""
    z = (x - model.mean) / model.scale
    p = model.probability(x)
    return np.concatenate([[np.sum(p - y)], z.T @ (p - y) + model.coefficients / c])


@pytest.mark.parametrize("c", [1.0, 0.3, 20.0])
def test_the_fit_is_the_penalised_optimum(c):
    x, y = _data()
    model = fit_logistic(x, y, c=c)
    np.testing.assert_allclose(_gradient(model, x, y, c), 0.0, atol=1e-7)
    np.testing.assert_allclose(model.mean, x.mean(axis=0))
    np.testing.assert_allclose(model.scale, x.std(axis=0))


def test_the_default_penalty_is_c_1():
    x, y = _data(1)
    default, one = fit_logistic(x, y), fit_logistic(x, y, c=1.0)
    assert default.intercept == one.intercept and np.array_equal(default.coefficients, one.coefficients)
    assert not np.allclose(fit_logistic(x, y, c=0.1).coefficients, one.coefficients)


def test_separable_outcomes_stay_finite_and_optimal():
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    model = fit_logistic(x, y)
    assert np.isfinite(model.coefficients).all()
    np.testing.assert_allclose(_gradient(model, x, y, 1.0), 0.0, atol=1e-8)


def test_a_constant_covariate_keeps_scale_one_and_no_weight():
    x, y = _data(2)
    x[:, 1] = 1e6
    model = fit_logistic(x, y)
    assert model.scale[1] == 1.0 and model.coefficients[1] == 0.0
    np.testing.assert_allclose(_gradient(model, x, y, 1.0), 0.0, atol=1e-7)


@pytest.mark.parametrize("x, y, kw, words", [
    (np.ones(3), np.array([0.0, 1.0, 1.0]), {}, r"covariates \(3,\) and outcomes \(3,\) do not match"),
    (np.ones((3, 1)), np.array([0.0, 1.0]), {}, r"covariates \(3, 1\) and outcomes \(2,\) do not match"),
    (np.array([[np.nan], [1.0]]), np.array([0.0, 1.0]), {}, "covariates: hold NaN or infinite values"),
    (np.ones((2, 1)), np.array([0.0, 2.0]), {}, "outcomes: must be 0 or 1"),
    (np.ones((2, 1)), np.array([1.0, 1.0]), {}, "outcomes: all 1, a logistic model needs both outcomes"),
    (np.ones((2, 1)), np.array([0.0, 1.0]), {"c": 0.0}, "c: must be positive, got 0.0"),
])
def test_refusals_name_the_bad_field(x, y, kw, words):
    with pytest.raises(BadArgument, match=f"^{words}$"):
        fit_logistic(x, y, **kw)


def test_probability_refuses_the_wrong_shape_by_name():
    x, y = _data()
    model = fit_logistic(x, y)
    with pytest.raises(BadArgument, match=r"^covariates: expected \(rows, 3\), got shape \(4, 2\)$"):
        model.probability(np.ones((4, 2)))
    with pytest.raises(BadArgument, match=r"^covariates: expected \(rows, 3\), got shape \(3,\)$"):
        model.probability(np.ones(3))


def test_losses_by_hand():
    assert brier(np.array([0.2, 0.9]), np.array([0, 1])).tolist() == pytest.approx([0.04, 0.01])
    assert log_loss(np.array([0.2, 0.9]), np.array([0, 1])).tolist() == pytest.approx([-math.log(0.8), -math.log(0.9)])
    # a certain wrong prediction is clipped at 1e-15, never infinite
    assert log_loss(np.array([0.0, 1.0]), np.array([1, 0])).tolist() == pytest.approx(
        [-math.log(1e-15), -math.log(1 - (1 - 1e-15))])
    assert log_loss(np.array([1.0, 0.0]), np.array([1, 0])).tolist() == pytest.approx([-math.log(1 - 1e-15)] * 2)
