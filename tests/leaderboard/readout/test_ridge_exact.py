"""The ridge readout's edges to the exact value: its default lambda, the constant-feature rule
relative to the feature's magnitude, the report's dictionary and the words of every refusal."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.ridge import fit_ridge


def _solution(x, y, penalty):
    """`(Z'Z + lambda I)^-1 Z'(y - mean y)` on population-standardised features, by hand."""
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    return np.linalg.solve(z.T @ z + penalty * np.eye(z.shape[1]), z.T @ (y - y.mean()))


def test_the_default_lambda_is_the_specs():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 4)), rng.normal(size=6)
    r = fit_ridge(x, y)
    assert r.penalty == 0.001
    np.testing.assert_allclose(r.weights, _solution(x, y, 0.001), rtol=1e-10)
    assert not np.allclose(_solution(x, y, 0.001), _solution(x, y, 1.0))


@pytest.mark.parametrize("n, d", [(3, 3), (3, 4), (4, 3)])
def test_primal_and_dual_give_the_hand_solution_at_the_boundary(n, d):
    rng = np.random.default_rng(n * 10 + d)
    x, y = rng.normal(size=(n, d)), rng.normal(size=n)
    r = fit_ridge(x, y, penalty=0.5)
    np.testing.assert_allclose(r.weights, _solution(x, y, 0.5), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r.predict(x), (x - x.mean(0)) / x.std(0) @ r.weights + y.mean(), rtol=1e-12)


def test_a_feature_is_constant_relative_to_its_magnitude():
    base = np.array([0.0, 1.0, 2.0, 3.0])
    big = 1e6 + np.array([0.0, 1e-5, 0.0, 1e-5])  # std 5e-6 < 1e-10 x 1e6: constant
    small = np.array([0.0, 1e-3, 0.0, 1e-3])  # std 5e-4 > 1e-10 x 1: varies
    r = fit_ridge(np.column_stack([base, big, small]), base * 2.0)
    assert r.kept.tolist() == [True, False, True]
    assert r.scale[1] == 1.0 and r.scale[2] == pytest.approx(5e-4)
    assert r.to_dict() == {"kind": "ridge", "lambda": 0.001, "n_train": 4, "n_features": 3,
                           "n_constant_features": 1, "constant": False}


def test_a_readout_with_no_varying_feature_predicts_the_train_mean():
    r = fit_ridge(np.ones((3, 2)), [1.0, 2.0, 6.0])
    assert r.constant and r.n_constant_features == 2 and r.to_dict()["constant"] is True
    assert r.predict(np.array([[5.0, -3.0]])).tolist() == [3.0]


@pytest.mark.parametrize("args, words", [
    ((np.ones(3), np.ones(3)), r"features: expected a 2-d array \(observations x features\), got shape \(3,\)"),
    ((np.ones((1, 2)), np.ones(1)), "features: 1 train observations, the readout needs at least 2"),
    ((np.ones((3, 2)), [1.0, np.nan, 2.0]), "labels: holds NaN or infinite values"),
    ((np.ones((3, 2)), np.ones(2)), r"labels: shape \(2,\) does not match 3 feature rows"),
    ((np.ones((3, 2)), np.ones(3), 0.0), "penalty: must be positive, got 0.0"),
    ((np.ones((3, 2)), np.ones(3), -1.0), "penalty: must be positive, got -1.0"),
    ((np.array([[1.0, np.inf], [2.0, 1.0]]), np.ones(2)), "features: holds NaN or infinite values"),
])
def test_refusals_name_the_bad_field(args, words):
    with pytest.raises(BadArgument, match=f"^{words}$"):
        fit_ridge(*args)


def test_predict_refuses_a_bad_matrix_by_name():
    r = fit_ridge(np.arange(6.0).reshape(3, 2) ** 2, [1.0, 2.0, 3.0])
    with pytest.raises(BadArgument, match=r"^features: expected a 2-d array"):
        r.predict(np.ones(2))
    with pytest.raises(BadArgument, match="^features: 1 columns, the readout was fitted on 2$"):
        r.predict(np.ones((2, 1)))
