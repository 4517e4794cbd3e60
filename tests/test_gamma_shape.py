"""The Gamma quantile's shape derivative (Hoffman 2014, eq. 15) and trigamma of
`ppl.infer.gamma_shape` against 30-digit references (mpmath) and scipy, including shapes
η = 0.01 + counts whose draws underflow double precision (given as log x)."""

import mpmath
import numpy as np
import pytest
from scipy.special import gammaincinv, gammaln, polygamma

from ppl.infer.gamma_shape import SERIES_LIMIT, log_shape_derivative, trigamma

mpmath.mp.dps = 30


def reference(a: float, log_x: float) -> float:
    """d log x/da = −∂_a P(a, x) / (x p(x; a)) in 30 digits, x = exp(log_x) unbounded below."""
    a, x = mpmath.mpf(a), mpmath.exp(mpmath.mpf(log_x))
    d_cdf = mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a)
    density = mpmath.exp((a - 1) * mpmath.log(x) - x - mpmath.loggamma(a))
    return float(-d_cdf / (density * x))


def log_quantile(a: float, level: float) -> float:
    """log of the Ga(a, 1) quantile at `level`; below 1e-250 from the small-x form
    P ≈ x^a/Γ(a + 1), so that levels whose quantile underflows still give a point."""
    x = gammaincinv(a, level)
    return float(np.log(x)) if x > 1e-250 else (np.log(level) + gammaln(a + 1)) / a


LEVELS = (1e-12, 1e-4, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-9)


@pytest.mark.parametrize("a", [0.01, 0.0137, 0.05, 0.31, 1.0, 2.5, 7.0, 60.0, 900.0, 5000.0])
def test_log_shape_derivative_matches_thirty_digits(a):
    """1e-12 from the series (x ≤ 4), 5e-10 from the five-point difference above (scipy's
    incomplete gamma function is good to about 1e-14 there)."""
    log_x = np.array([log_quantile(a, u) for u in LEVELS])
    expected = np.array([reference(a, lx) for lx in log_x])
    error = np.abs(log_shape_derivative(a, log_x) / expected - 1)
    series = log_x <= np.log(SERIES_LIMIT)
    assert np.all(error[series] < 1e-12) and np.all(error[~series] < 5e-10), error


def test_underflowing_draws_keep_their_derivative():
    """η = 0.01: at level 1e-4 the quantile is about 10^-402, below double precision; from log x
    the derivative is the small-x limit −(log x − ψ(a + 1))/a, to 1e-12."""
    a = np.array([0.01, 0.01 + 1e-3, 0.012])
    log_x = np.array([log_quantile(v, 1e-4) for v in a])
    assert np.all(log_x < np.log(np.finfo(float).tiny))
    expected = [reference(v, lx) for v, lx in zip(a, log_x)]
    np.testing.assert_allclose(log_shape_derivative(a, log_x), expected, rtol=1e-12)


def test_both_sides_of_the_series_limit_agree():
    """Just below and above `SERIES_LIMIT` the series and the difference of scipy's incomplete
    gamma function give the same derivative (to the difference's 1e-8)."""
    a = np.full(2, 6.0)
    log_x = np.log(SERIES_LIMIT) + np.array([-1e-9, 1e-9])
    below, above = log_shape_derivative(a, log_x)
    assert below == pytest.approx(reference(6.0, log_x[0]), rel=1e-10)
    assert above == pytest.approx(below, rel=1e-7)


def test_trigamma_matches_scipy():
    x = np.concatenate([np.logspace(-4, 7, 400), [0.01, 1.0, 5.999, 6.0, 1e4 + 0.5]])
    np.testing.assert_allclose(trigamma(x), polygamma(1, x), rtol=1e-12)
