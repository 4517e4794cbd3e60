"""The quadratic local bounds against independent computations: `bound:jaakkola` against a
hand-written Jaakkola–Jordan loop (Murphy §21.8.3) and Bishop's closed-form bound (10.164),
`bound:bohning` against the thesis's Algorithm 5 and the L-BFGS optimum of its bound; both
monotone, both true bounds, and in the order Theorem 4.6.1 proves (exact ≥ Jaakkola ≥ Böhning)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.special import expit, log_expit, log_ndtr, logsumexp

import ppl
from ppl.infer.likelihoods import bohning, jaakkola, jaakkola_lambda, quadrature
from ppl.infer.links import LIKELIHOODS

from gaussian_optimum import gaussian_elbo_optimum
from model_texts import LOGISTIC

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def data():
    table = pd.read_csv(MODELS / "logistic_regression.csv").iloc[:80, :7]  # intercept + 5 features, y
    x = table[[f"x{i}" for i in range(1, 6)]].to_numpy()
    y = pd.read_csv(MODELS / "logistic_regression.csv")["y"].to_numpy()[:80].astype(float)
    return table.assign(y=y.astype(int))[[f"x{i}" for i in range(1, 6)] + ["y"]], x, y


def lam(xi):
    return np.tanh(xi / 2) / (4 * xi)


def jaakkola_loop(x, y, sweeps=2000):
    d = x.shape[1]
    xi = np.ones(len(y))
    for _ in range(sweeps):
        precision = np.eye(d) + 2 * (x * lam(xi)[:, None]).T @ x
        cov = np.linalg.inv(precision)
        mean = cov @ (x.T @ (y - 0.5))
        xi = np.sqrt(np.einsum("ij,jk,ik->i", x, cov + np.outer(mean, mean), x))
    bound = (0.5 * np.linalg.slogdet(cov)[1] + 0.5 * mean @ precision @ mean
             + np.sum(log_expit(xi) - xi / 2 + lam(xi) * xi ** 2))
    return mean, cov, bound


def test_jaakkola_matches_the_textbook_loop_and_bound(data):
    table, x, y = data
    post = ppl.compile(LOGISTIC).infer(table, methods={"y": "jaakkola"}, tol=1e-300, max_iter=3000, seed=0)
    mean, cov, bound = jaakkola_loop(x, y)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    np.testing.assert_allclose(m, mean, atol=1e-8)
    np.testing.assert_allclose(v, cov, atol=1e-8)
    assert post.elbo == pytest.approx(bound, abs=1e-8)


def test_jaakkola_is_monotone_and_below_the_exact_elbo(data):
    table, x, y = data
    model = ppl.compile(LOGISTIC)
    jj = model.infer(table, methods={"y": "jaakkola"}, seed=0, tol=1e-12, max_iter=3000)
    exact = model.infer(table, seed=0, tol=1e-12, max_iter=3000)
    steps = np.diff(jj.trace)
    assert np.all(steps >= -1e-9 * np.abs(np.asarray(jj.trace[1:])))
    assert jj.elbo < exact.elbo  # a looser objective than the ELBO NC-VMP maximises
    # The reported value is a bound: the exact ELBO of the same q (by quadrature) is higher.
    m, v = jj["w"].family.mean_cov(jj["w"].natural)
    margin_m, margin_v = x @ m, np.einsum("ij,jk,ik->i", x, v, x)
    nodes, weights = np.polynomial.hermite.hermgauss(80)
    eta = margin_m[:, None] + np.sqrt(2 * margin_v)[:, None] * nodes
    expected = np.sum(weights / np.sqrt(np.pi) * (y[:, None] * eta + log_expit(-eta)))
    kl = 0.5 * (np.trace(v) + m @ m - len(m) - np.linalg.slogdet(v)[1])
    assert expected - kl > jj.elbo


def test_lambda_limit_at_zero():
    assert jaakkola_lambda(0.0) == pytest.approx(0.125, abs=1e-15)
    assert jaakkola_lambda(2.5) == pytest.approx(0.0848284, abs=1e-7)  # digest, VI chapter §21.8.3
    assert jaakkola_lambda(1e-5) == pytest.approx(np.tanh(5e-6) / 4e-5, rel=1e-12)


def test_jaakkola_refuses_a_probit_link():
    text = LOGISTIC.replace("logistic(X @ w)", "probit(X @ w)")
    with pytest.raises(ppl.PplError, match="jaakkola"):
        ppl.compile(text).infer({"X": np.eye(3), "y": np.array([1, 0, 1])}, methods={"y": "jaakkola"})


def bohning_loop(x, y, sweeps=3000):
    """The thesis's Algorithm 5: the site precision is fixed at ¼, so the covariance
    V = (I + XᵀX/4)⁻¹ is computed once; the mean iterates m ← V Xᵀ(y − σ(Xm) + Xm/4)."""
    cov = np.linalg.inv(np.eye(x.shape[1]) + x.T @ x / 4)
    mean = np.zeros(x.shape[1])
    for _ in range(sweeps):
        eta = x @ mean
        mean = cov @ (x.T @ (y - expit(eta) + eta / 4))
    margin_m, margin_v = x @ mean, np.einsum("ij,jk,ik->i", x, cov, x)
    kl = 0.5 * (np.trace(cov) + mean @ mean - len(mean) - np.linalg.slogdet(cov)[1])
    return mean, cov, np.sum(y * margin_m + log_expit(-margin_m) - margin_v / 8) - kl


def test_bohning_matches_algorithm_5_and_the_optimum_of_its_bound(data):
    table, x, y = data
    post = ppl.compile(LOGISTIC).infer(table, methods={"y": "bohning"}, tol=1e-300, max_iter=3000, seed=0)
    mean, cov, bound = bohning_loop(x, y)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    # The run stops when the bound no longer changes in floating point; the mean converges
    # linearly and is then within 1e-7 (the bound's error is the square of that).
    np.testing.assert_allclose(m, mean, atol=1e-6)
    np.testing.assert_allclose(v, cov, atol=1e-10)
    assert post.elbo == pytest.approx(bound, abs=1e-9)

    def terms(mm, vv):  # Böhning at ψ = m, written here (thesis eq 4.41)
        return y * mm + log_expit(-mm) - vv / 8, y - expit(mm), np.full_like(mm, -0.25)
    best, _, _ = gaussian_elbo_optimum(x, terms)
    assert post.elbo == pytest.approx(best, abs=1e-6)
    assert np.all(np.diff(post.trace) >= -1e-9 * np.abs(np.asarray(post.trace[1:])))


def test_theorem_4_6_1_exact_above_jaakkola_above_bohning():
    """At any margin: E[log f] ≥ Jaakkola ≥ Böhning, and the Jaakkola–Böhning gap is
    Δ = v/8 + h(m) − h(ξ*), h(x) = log 2cosh(x/2), ξ*² = m² + v (thesis §4.6)."""
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    rng = np.random.default_rng(0)
    m, v = rng.normal(scale=3, size=500), rng.gamma(1.0, 2.0, size=500)
    y = rng.integers(0, 2, size=500).astype(float)
    exact, jj, bb = (rule(lik, y, 1.0, m, v)[0] for rule in (quadrature, jaakkola, bohning))
    assert np.all(exact >= jj) and np.all(jj >= bb)

    def h(t):
        return np.logaddexp(t / 2, -t / 2)
    np.testing.assert_allclose(jj - bb, v / 8 + h(m) - h(np.sqrt(m * m + v)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("rule", [jaakkola, bohning])
def test_bound_gradients_are_derivatives_of_the_bound(rule):
    """g1 = ∂B/∂m, g2 = 2 ∂B/∂v: the sites are the natural gradients of the bound itself
    (at the optimal ξ or ψ, by the envelope theorem)."""
    lik = LIKELIHOODS[("Binomial", "logistic")]
    y, m, v = (a.ravel() for a in np.meshgrid([0.0, 4.0, 10.0], [-4.0, -0.5, 0.0, 2.0], [0.05, 1.0, 9.0],
                                              indexing="ij"))
    value, g1, g2 = rule(lik, y, 10.0, m, v)
    h = 1e-6
    np.testing.assert_allclose(g1, (rule(lik, y, 10.0, m + h, v)[0] - rule(lik, y, 10.0, m - h, v)[0]) / (2 * h),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g2, 2 * (rule(lik, y, 10.0, m, v + h)[0] - rule(lik, y, 10.0, m, v - h)[0]) / (2 * h),
                               rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- the piecewise rule

def test_piecewise_fixed_point_is_the_optimum_of_its_bound(data):
    """The Q10 bound's sites are its natural gradients, so the run ends at the bound's optimum
    over Gaussian q (L-BFGS, with the bound's expectation from ppl.infer.piecewise, itself
    checked against numerical integration in tests/test_piecewise.py)."""
    from ppl.infer.piecewise import expected_llp, table
    tab = table("quadratic", 10)
    table_, x, y = data

    def terms(mm, vv):
        value, d_m, d_v = expected_llp(tab, mm, vv)
        return y * mm - value, y - d_m, -2 * d_v
    best, mean, cov = gaussian_elbo_optimum(x, terms)
    post = ppl.compile(LOGISTIC.rstrip() + " @piecewise(pieces=10, kind=quadratic)").infer(table_, seed=0, tol=1e-13,
                                                                                 max_iter=3000)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    assert post.elbo == pytest.approx(best, abs=1e-6)
    np.testing.assert_allclose(m, mean, atol=1e-4)
    np.testing.assert_allclose(v, cov, atol=1e-4)


@pytest.mark.parametrize("kind, pieces", [("quadratic", 10), ("quadratic", 20), ("linear", 10)])
def test_piecewise_elbo_is_a_bound_within_n_times_the_table_error(kind, pieces):
    """Reported bound ≤ exact ELBO of the same q ≤ bound + N·ε_max (thesis Thm 4.6.2), and the
    exact optimum (NC-VMP) lies within the same distance."""
    from ppl.infer.piecewise import table
    model = ppl.load(MODELS / "logistic_regression.vim")
    text = (MODELS / "logistic_regression.vim").read_text().replace(
        "y ~ Bernoulli(logistic(X @ w))", f"y ~ Bernoulli(logistic(X @ w)) @piecewise(pieces={pieces}, kind={kind})")
    post = ppl.compile(text).infer(MODELS / "logistic_regression.csv", seed=0, tol=1e-10)
    exact = model.infer(MODELS / "logistic_regression.csv", seed=0, tol=1e-10)
    x = pd.read_csv(MODELS / "logistic_regression.csv").drop(columns="y").to_numpy()
    y = pd.read_csv(MODELS / "logistic_regression.csv")["y"].to_numpy(dtype=float)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    margin_m, margin_v = x @ m, np.einsum("ij,jk,ik->i", x, v, x)
    fit = quadrature(LIKELIHOODS[("Bernoulli", "logistic")], y, 1.0, margin_m, margin_v)[0].sum()
    own_q = fit - 0.5 * (np.trace(v) + m @ m - len(m) - np.linalg.slogdet(v)[1])
    slack = len(y) * table(kind, pieces).max_error
    assert post.elbo < own_q <= post.elbo + slack
    assert post.elbo < exact.elbo <= post.elbo + slack


# ---------------------------------------------------------------- thesis experiment E2

MU_TRUE, SIGMA_TRUE = 2.0, 2.0


def log_evidence(y, s, a, b, c, low, high):
    """log ∫ exp(y z − (a z² + b z + c)) N(z | μ*, s²) dz, the pieces [low, high] summed:
    each piece is a Gaussian integral of a quadratic exponent over an interval."""
    a, b, c, low, high = map(np.atleast_1d, (a, b, c, low, high))
    precision = 2 * a + 1 / s ** 2
    linear = y - b + MU_TRUE / s ** 2
    centre = linear / precision
    upper = log_ndtr((high - centre) * np.sqrt(precision))
    lower = log_ndtr((low - centre) * np.sqrt(precision))
    with np.errstate(divide="ignore"):  # a piece whose mass underflows contributes nothing
        mass = upper + np.log1p(-np.exp(np.minimum(lower - upper, 0.0)))
    return logsumexp(linear ** 2 / (2 * precision) - MU_TRUE ** 2 / (2 * s ** 2) - c
                     - 0.5 * np.log(precision * s ** 2) + mass)


def jaakkola_piece(xi):
    lam = jaakkola_lambda(xi)
    return lam, 0.5, -lam * xi ** 2 - xi / 2 + np.logaddexp(0, xi), -np.inf, np.inf


def bohning_piece(psi):
    return 0.125, expit(psi) - psi / 4, np.logaddexp(0, psi) - expit(psi) * psi + psi ** 2 / 8, -np.inf, np.inf


def bound_evidence(y, s, bound):
    """The bound's marginal likelihood p̂(y | μ*, s): a fixed table, or the best ξ / ψ."""
    if callable(bound):
        best = optimize.minimize_scalar(lambda t: -log_evidence(y, s, *bound(t)), bounds=(-30, 30),
                                        method="bounded", options={"xatol": 1e-10})
        return -best.fun
    return log_evidence(y, s, bound.a, bound.b, bound.c, bound.lows, bound.highs)


@pytest.mark.parametrize("name, expected", [("jaakkola", 0.0), ("bohning", 0.0), ("Q20", 2.0)])
def test_thesis_e2_bias_of_sigma_under_each_bound(name, expected):
    """1-D binary latent Gaussian, μ* = 2, σ* = 2, infinite data: maximise
    p* log p̂_σ(1) + (1 − p*) log p̂_σ(0) over σ with μ at μ*. Böhning and Jaakkola drive σ̂ to 0;
    the 20-piece quadratic bound recovers σ̂ within 0.1 of 2 (thesis §4.7, Fig. 4.4)."""
    from ppl.infer.piecewise import table
    z, w = np.polynomial.hermite.hermgauss(80)
    p_star = np.sum(w * expit(MU_TRUE + np.sqrt(2) * SIGMA_TRUE * z)) / np.sqrt(np.pi)
    assert p_star == pytest.approx(0.7752, abs=1e-4)
    bound = {"jaakkola": jaakkola_piece, "bohning": bohning_piece, "Q20": table("quadratic", 20)}[name]
    grid = np.linspace(0.01, 4.0, 200)
    objective = [p_star * bound_evidence(1.0, s, bound) + (1 - p_star) * bound_evidence(0.0, s, bound)
                 for s in grid]
    assert abs(grid[int(np.argmax(objective))] - expected) < 0.1


@pytest.mark.parametrize("options, message", [("pieces=7", "available: 3, 4, 5, 6, 8, 10, 20"),
                                              ("pieces=2.5", "whole number"),
                                              ("kind=cubic", "kinds: linear, quadratic")])
def test_piecewise_options_not_shipped_are_refused_where_written(options, message):
    text = LOGISTIC.rstrip() + f" @piecewise({options})"
    with pytest.raises(ppl.PplError, match=message) as caught:
        ppl.compile(text).infer({"X": np.eye(3), "y": np.array([1, 0, 1])})
    assert caught.value.span.line == 5
