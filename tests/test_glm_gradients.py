"""The gradients of E[log f] that every non-conjugate rule's site is built from, for every
likelihood ppl has: g1 = ∂E/∂m and g2 = 2 ∂E/∂v under the margin N(m, v) (Opper–Archambeau, eq
29) against finite differences of E[log f], E[log f] against adaptive quadrature, closed forms
against Gauss–Hermite, CVI's Monte Carlo estimates within their standard errors, and the
mean-parameter gradient of Khan & Lin's eqs 30–31."""

import dataclasses

import numpy as np
import pytest

from ppl.infer.likelihoods import monte_carlo, quadrature
from ppl.infer.links import LIKELIHOODS, gaussian

from gaussian_optimum import adaptive_expectation, gh_expect

CASES = {  # name -> (likelihood, observed values, trials)
    "Bernoulli-logistic": (LIKELIHOODS[("Bernoulli", "logistic")], [0.0, 1.0], 1.0),
    "Bernoulli-probit": (LIKELIHOODS[("Bernoulli", "probit")], [0.0, 1.0], 1.0),
    "Binomial-logistic": (LIKELIHOODS[("Binomial", "logistic")], [0.0, 3.0, 10.0], 10.0),
    "Poisson-exp": (LIKELIHOODS[("Poisson", "exp")], [0.0, 3.0, 12.0], 1.0),
    "Normal": (gaussian(np.asarray(2.5)), [-1.2, 0.4], 1.0),
}
MEANS, VARIANCES = [-5.0, -1.3, 0.0, 0.7, 4.0], [0.01, 0.3, 1.0, 4.0]


def test_every_likelihood_is_covered():
    assert {c[0].name for c in CASES.values()} >= {lik.name for lik in LIKELIHOODS.values()}


def grid(values):
    y, m, v = np.meshgrid(np.asarray(values, float), MEANS, VARIANCES, indexing="ij")
    return y.ravel(), m.ravel(), v.ravel()


def quad_expectation(lik, y, n, m, v):
    """E[log f] under N(m, v) by adaptive quadrature."""
    return adaptive_expectation(lambda eta: lik.log_f(y, n, eta), m, v)


@pytest.mark.parametrize("name", list(CASES))
def test_quadrature_gradients_are_derivatives_of_the_expectation(name):
    """g1 = ∂E[log f]/∂m and g2 = 2 ∂E[log f]/∂v (Opper–Archambeau, eq 29) by central differences;
    E[log f] itself against adaptive quadrature. Closed forms (Poisson, Normal) against Gauss–Hermite."""
    lik, values, n = CASES[name]
    y, m, v = grid(values)
    expected, g1, g2 = quadrature(lik, y, n, m, v)

    def e(mm, vv):
        return quadrature(lik, y, n, mm, vv)[0]
    h, hv = 1e-4, np.minimum(1e-4, v / 10)
    fd1 = (e(m + h, v) - e(m - h, v)) / (2 * h)
    fd2 = 2 * (e(m, v + hv) - e(m, v - hv)) / (2 * hv)
    np.testing.assert_allclose(g1, fd1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g2, fd2, rtol=1e-6, atol=1e-6)

    reference = np.array([quad_expectation(lik, a, n, b, c) for a, b, c in zip(y, m, v)])
    np.testing.assert_allclose(expected, reference, rtol=1e-10, atol=1e-8)

    if lik.closed_form is not None:
        by_nodes = quadrature(dataclasses.replace(lik, closed_form=None), y, n, m, v)
        for closed, nodes in zip((expected, g1, g2), by_nodes):
            np.testing.assert_allclose(closed, nodes, rtol=1e-10, atol=1e-10)


def test_quadrature_is_exact_for_wide_margins():
    """Margins this wide occur at ppl's own starting point: under the prior w ~ N(0, I) of
    models/logistic_regression.vim, v_n = |x_n|² has median 20 and maximum 423."""
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    m, v = np.array([-2.0, 0.0, 3.0, 0.0]), np.array([16.0, 16.0, 50.0, 50.0])
    y = np.array([1.0, 0.0, 1.0, 1.0])
    expected, _, _ = quadrature(lik, y, 1.0, m, v)
    reference = np.array([quad_expectation(lik, a, 1.0, b, c) for a, b, c in zip(y, m, v)])
    np.testing.assert_allclose(expected, reference, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", list(CASES))
def test_monte_carlo_gradients_agree_with_quadrature(name):
    """CVI's reparameterised estimates with 200k draws: within 5 standard errors of the exact
    g1, g2 (the standard errors from the exact variances of ∂ log f and ∂² log f)."""
    lik, values, n = CASES[name]
    y, m, v = (np.array(a, dtype=float) for a in np.meshgrid(values[:2], [-1.3, 0.7], [0.3, 1.0], indexing="ij"))
    y, m, v = y.ravel(), m.ravel(), v.ravel()
    value, g1, g2 = quadrature(lik, y, n, m, v)
    draws = 200_000
    estimate, mc1, mc2, variance = monte_carlo(lik, y, n, m, v, np.random.default_rng(42), draws)
    # E[log f] from the same draws, with the Taylor control variate: within 5 of its own standard
    # errors, which are smaller than those of the plain average of log f
    assert np.all(np.abs(estimate - value) <= 5 * np.sqrt(variance) + 1e-12)
    plain = (gh_expect(lambda eta: lik.log_f(y[:, None], n, eta) ** 2, m, v) - value ** 2) / draws
    assert np.all(variance < plain)
    for exact, estimate, derivative in ((g1, mc1, lik.d1), (g2, mc2, lik.d2)):
        second = gh_expect(lambda eta: derivative(y[:, None], n, eta) ** 2, m, v)
        se = np.sqrt(np.maximum(second - exact ** 2, 0.0) / draws)
        assert np.all(np.abs(estimate - exact) <= 5 * se + 1e-12), (estimate - exact) / np.maximum(se, 1e-300)
        if lik.name == "Normal":  # the Gaussian's closed form, no draws
            np.testing.assert_allclose(estimate, exact, rtol=0, atol=1e-12)
        else:
            assert np.all(np.abs(estimate - exact) > 0) or np.all(se < 1e-12)  # genuinely sampled



@pytest.mark.parametrize("name", ["Bernoulli-logistic", "Bernoulli-probit", "Poisson-exp"])
@pytest.mark.parametrize("samples", [5, 6, 16])
def test_monte_carlo_standard_error_is_that_of_the_pairs(name, samples):
    """CVI's draws come in antithetic pairs, so its variance of the E[log f] estimate comes from
    the spread of the pairs' means, not of the draws: over 2,000 seeds it matches the spread of
    the estimates themselves (within 15%; 30% with an odd count's lone draw, counted as half a
    pair), and their mean is the exact E[log f]."""
    lik, values, n = CASES[name]
    m, v = np.array([-2.0, -0.5, 0.3, 1.5, 0.8]), np.array([0.01, 0.2, 0.6, 0.5, 0.05])
    y = np.resize(np.array(values), m.size)
    runs = np.array([monte_carlo(lik, y, n, m, v, np.random.default_rng(seed), samples) for seed in range(2000)])
    spread = runs[:, 0].var(axis=0)
    np.testing.assert_allclose(runs[:, 3].mean(axis=0) / spread, 1.0, atol=0.15 if samples % 2 == 0 else 0.3)
    exact = quadrature(lik, y, n, m, v)[0]
    assert np.all(np.abs(runs[:, 0].mean(axis=0) - exact) <= 4 * np.sqrt(spread / len(runs)))


def test_antithetic_pairs_cancel_the_odd_part_of_the_gradients():
    """A pair's ±ε cancel the odd part of f'(m + √v ε): at m = 0 the logistic's σ(s) + σ(−s) = 1
    makes g1 exact for every seed, and on narrow margins g1's error is O(v) (within v at
    v = 1e-4, where 16 independent draws would err by about 0.25 √(v/16) = 6e-4)."""
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    y, v = np.ones(200), np.full(200, 1e-4)
    for m in (np.zeros(200), np.linspace(-3, 3, 200)):
        g1 = monte_carlo(lik, y, 1.0, m, v, np.random.default_rng(3), 16)[1]
        exact = quadrature(lik, y, 1.0, m, v)[1]
        assert np.max(np.abs(g1 - exact)) <= (1e-15 if not m.any() else v[0])

def test_mean_parameter_gradient_eqs_30_31():
    """∂E/∂μ1 = g1 − m g2 and ∂E/∂μ2 = ½ g2 with μ1 = m, μ2 = m² + v (Khan & Lin eqs 30–31).
    Gaussian: E[log N(y | η, 1/τ)] = ½ log(τ/2π) − ½τ(y² − 2yμ1 + μ2), gradient (τy, −τ/2).
    Logistic: central differences of E in (μ1, μ2)."""
    tau = 2.5
    lik = gaussian(np.asarray(tau))
    y, m, v = grid([-1.2, 0.4, 3.0])
    for version in (lik, dataclasses.replace(lik, closed_form=None)):
        _, g1, g2 = quadrature(version, y, 1.0, m, v)
        np.testing.assert_allclose(g1 - m * g2, tau * y, rtol=0, atol=1e-10)
        np.testing.assert_allclose(0.5 * g2, -0.5 * tau, rtol=0, atol=1e-10)

    logistic = LIKELIHOODS[("Bernoulli", "logistic")]
    y, m, v = grid([0.0, 1.0])
    mu1, mu2 = m, m * m + v

    def e(a, b):
        return quadrature(logistic, y, 1.0, a, b - a * a)[0]
    _, g1, g2 = quadrature(logistic, y, 1.0, m, v)
    h = 1e-5
    np.testing.assert_allclose((e(mu1 + h, mu2) - e(mu1 - h, mu2)) / (2 * h), g1 - m * g2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose((e(mu1, mu2 + h) - e(mu1, mu2 - h)) / (2 * h), 0.5 * g2, rtol=1e-6, atol=1e-6)
