"""Expectations of a logistic likelihood under margins of sd up to 1e4 (covariates on their own
scale under a unit prior). The split Gauss–Legendre rule spaced its nodes 24 sd / 96 apart and
missed the spike of f'' = −σ(η)σ(−η), so E[f''] (the NC-VMP site's precision) came out 1e-6 of
its value at sd 1e4 (−3e-11 against −4e-5) and 11% off at sd 1e3; the NC-VMP step was no ascent
direction, and runs crawled downhill for thousands of sweeps. It now cuts at ±40 as well."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit
from scipy.stats import norm

import ppl
from ppl.infer.likelihoods import LIKELIHOODS, quadrature

LOGISTIC = LIKELIHOODS[("Bernoulli", "logistic")]
WIDE = [(500.0, 1e8), (0.0, 1e6), (3000.0, 1e6), (-40.0, 1e4), (7.0, 400.0)]


def _near_zero(fn, m, v) -> float:
    """∫ fn(η) N(η; m, v) dη over |η| ≤ 60, where the logistic's curvature lives (adaptive)."""
    return integrate.quad(lambda e: fn(e) * norm.pdf(e, m, np.sqrt(v)), -60, 60, points=[0.0], limit=200,
                          epsabs=0, epsrel=1e-12)[0]


@pytest.mark.parametrize("m, v", WIDE)
@pytest.mark.parametrize("y", [0.0, 1.0])
def test_gradients_at_wide_margins_are_the_exact_expectations(m, v, y):
    """g1 = E[y − σ(η)] = y − P(η > 0) − ∫(σ(η) − 1[η > 0]) N dη and g2 = E[f''] = −∫σσ̄ N dη,
    each integral over the logistic's transition, where N is nearly flat, by adaptive quadrature."""
    _, g1, g2 = quadrature(LOGISTIC, np.array([y]), 1.0, np.array([m]), np.array([v]))
    step = y - norm.sf(0.0, m, np.sqrt(v)) - _near_zero(lambda e: expit(e) - (e > 0), m, v)
    curvature = -_near_zero(lambda e: expit(e) * expit(-e), m, v)
    np.testing.assert_allclose(g1[0], step, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g2[0], curvature, rtol=1e-6)


def test_separable_wide_data_with_covariates_in_thousands_converge_under_ncvmp():
    """30 rows, 60 covariates of sd 1000, labels the sign of the first: the default ran 500 sweeps
    to −42.3 (the ELBO falling at the end), and 5,000 to −135.0. It now reaches its fixed point,
    as a run without SQUAREM does, whose trace falls only where it halves its step (NC-VMP's full
    step is no ascent step); before, it fell at 4,792 of 5,000 sweeps."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 60)) * 1000
    model = ppl.compile("data X: real[N, D] from x1..xD\ndata y: bool[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                        "y ~ Bernoulli(logistic(X @ w))\n")
    data = {"X": x, "y": (x[:, 0] > 0).astype(int)}
    post = model.infer(data, seed=0)
    plain = model.infer(data, seed=0, accelerate=False)
    assert post.converged and plain.converged
    assert abs(post.elbo - plain.elbo) < 1e-5
    falls = np.sum(np.diff(plain.trace) < -1e-9 * np.abs(plain.trace[1:]))
    assert falls == sum("the objective fell" in note for note in plain.notes) <= 3
