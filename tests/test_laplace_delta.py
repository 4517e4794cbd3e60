"""`laplace` and `delta` (Wang & Blei 2013) against independent computations.

Both expand log f(η) to second order at the margin's mean m. Laplace takes g1 = ∂log f(m) and
g2 = ∂²log f(m), so each update is a Newton step and the fixed point is the standard Laplace
approximation (mode, inverse negative Hessian). The delta method differentiates the expansion's
expectation log f(m) + ½ log f''(m) v, which brings in the third derivative; its fixed point is
the optimum of that objective over Gaussian q.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit

import ppl
from ppl.infer.likelihoods import delta, laplace
from ppl.infer.links import LIKELIHOODS, gaussian

from gaussian_optimum import gaussian_elbo_optimum
from model_texts import LOGISTIC

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def breast():
    table = pd.read_csv(MODELS / "logistic_regression.csv")
    x = table.drop(columns="y").to_numpy()
    return table, x, table["y"].to_numpy(dtype=float)


def irls_laplace(x, y, sweeps=100):
    """The textbook Laplace approximation: Newton (IRLS) to the mode of log p(w | y) with a
    N(0, I) prior, covariance the inverse negative Hessian there."""
    w = np.zeros(x.shape[1])
    for _ in range(sweeps):
        p = expit(x @ w)
        hessian = np.eye(len(w)) + (x * (p * (1 - p))[:, None]).T @ x
        w = w + np.linalg.solve(hessian, x.T @ (y - p) - w)
    p = expit(x @ w)
    return w, np.linalg.inv(np.eye(len(w)) + (x * (p * (1 - p))[:, None]).T @ x)


def test_laplace_vi_is_the_laplace_approximation(breast):
    table, x, y = breast
    post = ppl.compile(LOGISTIC).infer(table, methods={"y": "laplace"}, seed=0, tol=1e-14, max_iter=200)
    mode, cov = irls_laplace(x, y)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    np.testing.assert_allclose(m, mode, rtol=0, atol=1e-8)
    np.testing.assert_allclose(v, cov, rtol=0, atol=1e-8)
    assert post.converged and post.iterations < 30  # Newton: a handful of sweeps
    assert any("not a bound" in note for note in post.notes)


def delta_logistic_terms(y):
    """log f = yη − log(1 + e^η) expanded at m: the delta objective and its (m, 2·v) derivatives,
    written here independently of ppl."""
    def terms(m, v):
        p = expit(m)
        d2 = -p * (1 - p)
        d3 = -p * (1 - p) * (1 - 2 * p)
        return y * m + log_expit(-m) + 0.5 * d2 * v, y - p + 0.5 * d3 * v, d2
    return terms


def test_delta_vi_fixed_point_is_the_optimum_of_its_objective(breast):
    table, x, y = breast
    rows = slice(0, 60)
    data = table.iloc[rows, :].loc[:, ["x1", "x2", "x3", "x4", "y"]]
    best, mean, cov = gaussian_elbo_optimum(x[rows, :4], delta_logistic_terms(y[rows]))
    post = ppl.compile(LOGISTIC).infer(data, methods={"y": "delta"}, seed=0, tol=1e-14, max_iter=2000)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    assert post.elbo == pytest.approx(best, abs=1e-6)
    np.testing.assert_allclose(m, mean, rtol=0, atol=1e-4)
    np.testing.assert_allclose(v, cov, rtol=0, atol=1e-4)


def test_delta_and_laplace_differ_only_by_the_third_derivative_term():
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    y, m, v = np.array([0.0, 1.0, 1.0]), np.array([-1.0, 0.3, 2.0]), np.array([0.5, 2.0, 0.1])
    value_l, g1_l, g2_l = laplace(lik, y, 1.0, m, v)
    value_d, g1_d, g2_d = delta(lik, y, 1.0, m, v)
    np.testing.assert_array_equal(value_l, value_d)
    np.testing.assert_array_equal(g2_l, g2_d)
    np.testing.assert_allclose(g1_d - g1_l, 0.5 * lik.d3(y, 1.0, m) * v, rtol=1e-14)
    assert np.all(g1_d != g1_l)


CASES = {
    "Bernoulli-logistic": (LIKELIHOODS[("Bernoulli", "logistic")], [0.0, 1.0], 1.0),
    "Bernoulli-probit": (LIKELIHOODS[("Bernoulli", "probit")], [0.0, 1.0], 1.0),
    "Binomial-logistic": (LIKELIHOODS[("Binomial", "logistic")], [0.0, 3.0, 10.0], 10.0),
    "Poisson-exp": (LIKELIHOODS[("Poisson", "exp")], [0.0, 3.0, 12.0], 1.0),
    "Normal": (gaussian(np.asarray(2.5)), [-1.2, 0.4], 1.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_derivatives_by_finite_differences(name):
    """d1, d2 and d3 (the delta method's third derivative) by central differences."""
    lik, values, n = CASES[name]
    y, eta = (a.ravel() for a in np.meshgrid(values, np.linspace(-6, 4, 41), indexing="ij"))
    h = 1e-5
    for f, df in ((lik.log_f, lik.d1), (lik.d1, lik.d2), (lik.d2, lik.d3)):
        fd = (f(y, n, eta + h) - f(y, n, eta - h)) / (2 * h)
        np.testing.assert_allclose(df(y, n, eta), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(CASES))
def test_delta_gradients_are_derivatives_of_its_objective(name):
    """g1 = ∂T/∂m and g2 = 2 ∂T/∂v for T(m, v) = log f(m) + ½ log f''(m) v."""
    lik, values, n = CASES[name]
    y, m, v = (a.ravel() for a in np.meshgrid(values, [-3.0, -0.4, 0.0, 1.7], [0.01, 0.5, 3.0], indexing="ij"))
    value, g1, g2 = delta(lik, y, n, m, v)
    h = 1e-5
    np.testing.assert_allclose(g1, (delta(lik, y, n, m + h, v)[0] - delta(lik, y, n, m - h, v)[0]) / (2 * h),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g2, 2 * (delta(lik, y, n, m, v + h)[0] - delta(lik, y, n, m, v - h)[0]) / (2 * h),
                               rtol=1e-6, atol=1e-8)


def test_a_gaussian_likelihood_is_exact_under_both():
    """log f quadratic in η: the expansion is exact, so both rules give the exact posterior."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=40) / 2
    text = LOGISTIC.replace("bool[N]", "real[N]").replace("Bernoulli(logistic(X @ w))", "Normal(X @ w, 4.0)")
    data = {"X": x, "y": y}
    exact = ppl.compile(text).infer(data, seed=0, tol=1e-14)
    precision = np.eye(3) + 4.0 * x.T @ x
    for rule in ("laplace", "delta"):
        post = ppl.compile(text).infer(data, methods={"y": rule}, seed=0, tol=1e-14, max_iter=100)
        np.testing.assert_allclose(post["w"].mean, np.linalg.solve(precision, 4.0 * x.T @ y), atol=1e-10)
        np.testing.assert_allclose(post["w"].mean, exact["w"].mean, atol=1e-10)
        assert post.elbo == pytest.approx(exact.elbo, abs=1e-8)
