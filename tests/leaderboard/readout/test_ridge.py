"""The spec's ridge readout against a direct least-squares solution."""

import numpy as np
import pytest

from leaderboard.errors import BadArgument
from leaderboard.readout.ridge import fit_ridge


def direct(x, y, penalty):
    """Standardise, centre, and solve the augmented least-squares problem [Z; sqrt(l) I] w = [y; 0]."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    z = (x - mean) / std
    augmented = np.vstack([z, np.sqrt(penalty) * np.eye(x.shape[1])])
    target = np.concatenate([y - y.mean(), np.zeros(x.shape[1])])
    w = np.linalg.lstsq(augmented, target, rcond=None)[0]
    return lambda new: ((new - mean) / std) @ w + y.mean()


def problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.5, 20.0, size=d) + rng.normal(size=d) * 5
    y = x @ rng.normal(size=d) + rng.normal(scale=0.1, size=n)
    return x, y, rng.normal(size=(7, d)) * 3


@pytest.mark.parametrize("n,d", [(30, 5), (8, 20)])  # primal and dual forms
def test_matches_direct_least_squares(n, d):
    x, y, new = problem(n, d)
    readout = fit_ridge(x, y, penalty=1e-3)
    np.testing.assert_allclose(readout.predict(new), direct(x, y, 1e-3)(new), rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(readout.predict(x), direct(x, y, 1e-3)(x), rtol=1e-7, atol=1e-7)


def test_hand_solution_one_feature():
    # x = (0, 2), y = (0, 4): z = (-1, 1), w = z'y_c / (z'z + 1) = 4 / 3 with lambda 1, b = 2
    readout = fit_ridge(np.array([[0.0], [2.0]]), np.array([0.0, 4.0]), penalty=1.0)
    assert readout.intercept == 2.0
    np.testing.assert_allclose(readout.weights, [4.0 / 3.0])
    np.testing.assert_allclose(readout.predict(np.array([[1.0], [4.0]])), [2.0, 2.0 + 3 * 4.0 / 3.0])


def test_zero_std_column_is_left_out():
    x, y, new = problem(30, 4, seed=1)
    with_constant = np.column_stack([x[:, :2], np.full(30, 3.7), x[:, 2:]])
    readout = fit_ridge(with_constant, y)
    assert readout.n_constant_features == 1 and list(readout.kept) == [True, True, False, True, True]
    shifted = np.column_stack([new[:, :2], np.full(7, -100.0), new[:, 2:]])
    np.testing.assert_allclose(readout.predict(shifted), fit_ridge(x, y).predict(new), rtol=1e-10)
    assert np.isfinite(readout.predict(shifted)).all()
    assert readout.to_dict()["n_constant_features"] == 1


def test_all_constant_features_give_a_constant_readout():
    readout = fit_ridge(np.ones((5, 3)), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert readout.constant
    np.testing.assert_array_equal(readout.predict(np.random.default_rng(0).normal(size=(4, 3))), np.full(4, 3.0))


def test_bad_arguments():
    with pytest.raises(BadArgument, match="features: holds NaN"):
        fit_ridge(np.array([[np.nan], [1.0]]), np.array([0.0, 1.0]))
    with pytest.raises(BadArgument, match="labels: shape"):
        fit_ridge(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(BadArgument, match="features: 3 columns, the readout was fitted on 2"):
        fit_ridge(np.eye(2) + [[0, 1], [2, 0]], np.array([0.0, 1.0])).predict(np.zeros((1, 3)))
