"""Pathwise gradients for Gamma and Dirichlet q and the mean-parameter solves (`ppl.infer.pathwise`).

Checked against computations written here with scipy alone:

- dx/dα of a Gamma draw against finite differences of scipy's Gamma quantile at a fixed level;
- the pathwise ∇_λ E[h] (Khan & Lin eq. 74) is unbiased: its mean over many draws matches
  finite differences of E[h] by adaptive quadrature, for h = log(z + c), a Poisson log-rate;
- the pathwise Ĉ = mean ∂t/∂λ (eq. 73) is unbiased: it matches ∇²A (SSMF eq. 27), trigamma
  for the Gamma, diag(ψ'(α)) − ψ'(α₀)11ᵀ for the Dirichlet;
- the same-draws solve Ĉ⁻ᵀĝ is exact, draw by draw, when f is linear in t, and near the exact
  C⁻¹∇_λ E[h] otherwise (its bias is of order 1/S);
- the Sherman–Morrison Dirichlet solve against a dense solve and finite differences of the
  mean map (SSMF eq. 38);
- a conjugate Dirichlet–Categorical factor through the Dirichlet CVI gives exactly the VMP
  message (the digest's test target 2).
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import digamma, gammaincinv, gammaln, polygamma

import ppl
from ppl.families import Dirichlet, Gamma
from ppl.infer import build_problem
from ppl.infer.factors.gamma_cvi import fisher_solve
from ppl.infer.initialise import initialise
from ppl.infer.pathwise import (dirichlet_draws, dirichlet_fisher_solve, dirichlet_jacobian, gamma_draws,
                                gamma_jacobian, gamma_shape_derivative, same_draws_solve)


@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 3.0, 50.0, 2000.0])
def test_gamma_shape_derivative_matches_the_quantile_finite_difference(alpha):
    levels = np.concatenate([np.linspace(0.001, 0.999, 41), [1e-8, 1 - 1e-8]])
    x = gammaincinv(alpha, levels)
    h = 1e-4 * min(alpha, np.sqrt(alpha))  # in log x, which is smooth in α even in the far lower tail
    reference = x * (np.log(gammaincinv(alpha + h, levels)) - np.log(gammaincinv(alpha - h, levels))) / (2 * h)
    np.testing.assert_allclose(gamma_shape_derivative(alpha, x), reference, rtol=2e-6)


def gamma_expect(f, alpha, beta):
    """E[f(z)] under Ga(α, β) by adaptive quadrature in s = log(βz)."""
    def integrand(s):
        return f(np.exp(s) / beta) * np.exp(alpha * s - np.exp(s) - gammaln(alpha))
    mode = np.log(alpha)
    return sum(integrate.quad(integrand, lo, hi, epsabs=0, epsrel=1e-12, limit=400)[0]
               for lo, hi in ((mode - 40 / alpha - 15, mode), (mode, np.log(alpha + 15 * np.sqrt(alpha) + 60))))


def lambda_gradient(f, alpha, beta, h=1e-5):
    """∇_λ E[f] for λ = (α − 1, −β) by central differences of the quadrature."""
    d_alpha = (gamma_expect(f, alpha + h, beta) - gamma_expect(f, alpha - h, beta)) / (2 * h)
    d_beta = (gamma_expect(f, alpha, beta + h * beta) - gamma_expect(f, alpha, beta - h * beta)) / (2 * h * beta)
    return np.array([d_alpha, -d_beta])


LOG_RATE = (2.5, 0.7, 0.4)  # h(z) = y log(z + c): y = 2.5, c = 0.7; q = Ga(α, β) below


@pytest.mark.parametrize("alpha,beta", [(0.6, 0.8), (4.0, 2.0)])
def test_gamma_pathwise_gradient_and_fisher_are_unbiased(alpha, beta):
    y, c, _ = LOG_RATE
    z, dz = gamma_draws(np.full(4000, alpha), np.full(4000, beta), np.random.default_rng(1), 50)
    per_draw = (y / (z + c))[..., None] * dz  # (4000, 50, 2)
    grad = per_draw.reshape(-1, 2)
    exact = lambda_gradient(lambda v: y * np.log(v + c), alpha, beta)
    se = grad.std(axis=0) / np.sqrt(len(grad))
    assert np.all(np.abs(grad.mean(axis=0) - exact) < 4 * se), (grad.mean(axis=0), exact, se)
    jac = gamma_jacobian(z, dz).reshape(-1, 2, 2)
    fisher = np.array([[polygamma(1, alpha), 1 / beta], [1 / beta, alpha / beta ** 2]])
    assert np.all(np.abs(jac.mean(axis=0) - fisher) < 4 * jac.std(axis=0) / np.sqrt(len(jac)))


@pytest.mark.parametrize("alpha,beta", [(0.6, 0.8), (4.0, 2.0), (400.0, 100.0)])
def test_same_draws_solve_is_near_the_exact_mean_gradient(alpha, beta):
    """The mean over 2000 independent 32-draw estimates lies within 4 standard errors plus 2%
    of C⁻¹∇_λ E[h] (the ratio of two averages is biased by O(1/S)); 2% of the message's size
    m₁ + m₂E[z], in the units of each coordinate (m₁ pairs with log z, m₂ with z)."""
    y, c, _ = LOG_RATE
    z, dz = gamma_draws(np.full(2000, alpha), np.full(2000, beta), np.random.default_rng(2), 32)
    estimates = same_draws_solve(gamma_jacobian(z, dz), (y / (z + c))[..., None] * dz)
    exact = fisher_solve(alpha, beta, lambda_gradient(lambda v: y * np.log(v + c), alpha, beta))
    se = estimates.std(axis=0) / np.sqrt(len(estimates))
    size = abs(exact[0]) + abs(exact[1]) * alpha / beta
    tolerance = 4 * se + 0.02 * size * np.array([1.0, beta / alpha])
    assert np.all(np.abs(estimates.mean(axis=0) - exact) < tolerance), (estimates.mean(axis=0), exact, se)


def test_same_draws_solve_is_exact_for_a_log_linear_f():
    """f = a log z + b z (and f = c·log π): the solve returns (a, b) (and c) from three draws."""
    rng = np.random.default_rng(3)
    z, dz = gamma_draws(np.array([0.3, 3.0, 3000.0]), np.array([0.3, 1.0, 10.0]), rng, 3)
    message = same_draws_solve(gamma_jacobian(z, dz), (1.5 / z - 0.7)[..., None] * dz)
    np.testing.assert_allclose(message, np.tile([1.5, -0.7], (3, 1)), rtol=1e-9)
    pi, d = dirichlet_draws(np.array([[0.5, 2.0, 7.0], [300.0, 200.0, 100.0]]), rng, 3)
    weights = np.array([1.0, -2.0, 3.0])
    h = weights / pi  # ∂f/∂π
    message = same_draws_solve(dirichlet_jacobian(pi, d), (h - np.sum(h * pi, axis=-1, keepdims=True)) * d)
    np.testing.assert_allclose(message, np.tile(weights, (2, 1)), rtol=1e-8)


def dirichlet_fisher(alpha):
    return np.diag(polygamma(1, alpha)) - polygamma(1, alpha.sum())


@pytest.mark.parametrize("alpha", [[2.0, 5.0, 0.5], [0.1, 0.2, 0.3, 40.0], [900.0, 50.0]])
def test_dirichlet_fisher_solve_matches_a_dense_solve_and_the_mean_map(alpha):
    alpha = np.array(alpha)
    g = np.random.default_rng(4).normal(size=len(alpha))
    np.testing.assert_allclose(dirichlet_fisher_solve(alpha, g), np.linalg.solve(dirichlet_fisher(alpha), g),
                               rtol=1e-10)
    h = 1e-6 * alpha
    columns = [(Dirichlet(len(alpha)).to_mean(alpha - 1 + h[j] * np.eye(len(alpha))[j])
                - Dirichlet(len(alpha)).to_mean(alpha - 1 - h[j] * np.eye(len(alpha))[j])) / (2 * h[j])
               for j in range(len(alpha))]
    np.testing.assert_allclose(np.array(columns).T, dirichlet_fisher(alpha), rtol=1e-6, atol=1e-9)


def test_dirichlet_pathwise_fisher_is_unbiased():
    """The mean of ∂ log π/∂α over draws is ∇²A (SSMF eq. 27)."""
    alpha = np.array([0.7, 2.0, 5.0])
    pi, d = dirichlet_draws(np.tile(alpha, (2000, 1)), np.random.default_rng(5), 50)
    jac = dirichlet_jacobian(pi, d).reshape(-1, 3, 3)
    assert np.all(np.abs(jac.mean(axis=0) - dirichlet_fisher(alpha)) < 4 * jac.std(axis=0) / np.sqrt(len(jac)))


def test_dirichlet_categorical_through_cvi_is_the_vmp_message():
    """`z[n] ~ Categorical(pi)`, z observed: the VMP message to pi is the counts; Dirichlet CVI
    sends C⁻¹∇_α E[Σ log π_z] (exact, via finite differences of E[log π]) and the same-draws
    estimate of it, and both are the counts — so with β = 1 the update is the VMP update."""
    text = "const K = 4\ndata z: cat(K)[N]\npi ~ Dirichlet(ones(K))\nfor n in 1..N {\n  z[n] ~ Categorical(pi)\n}"
    model = ppl.compile(text)
    codes = np.random.default_rng(6).integers(0, 4, 37)  # 0-based; the data are 1..4
    dataset = model.bind({"z": codes + 1})
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    state = initialise(problem, np.random.default_rng(0))
    alpha = np.array([[1.3, 4.0, 0.6, 2.2]])
    state.set("pi", alpha - 1)
    vmp = next(f for f in problem.factors if f.name == "z[n]").message(state, "pi")
    counts = np.bincount(codes, minlength=4).astype(float)
    np.testing.assert_allclose(vmp[0], counts)

    def expected(a):  # E[Σ_n log π_{z_n}] in closed form
        return counts @ (digamma(a) - digamma(a.sum()))
    h = 1e-6
    grad = np.array([(expected(alpha[0] + h * e) - expected(alpha[0] - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(dirichlet_fisher_solve(alpha[0], grad), vmp[0], rtol=1e-6)
    pi, d = dirichlet_draws(alpha, np.random.default_rng(7), 5)
    per_draw = counts / pi
    mc = same_draws_solve(dirichlet_jacobian(pi, d), (per_draw - np.sum(per_draw * pi, axis=-1, keepdims=True)) * d)
    np.testing.assert_allclose(mc, vmp, rtol=1e-9)
    prior = next(f for f in problem.factors if f.name == "pi").message(state, "pi")
    np.testing.assert_allclose(prior + mc, prior + vmp, rtol=1e-9)  # β = 1: λ ← prior + message
