"""E[lse(η)], E[p], E[p(1 − p)] of independent Gaussian margins (ppl.infer.softmax_moments) against
a product Gauss–Hermite rule over the K margins themselves, and the identities they must keep."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from ppl.infer import softmax_moments
from ppl.infer.softmax_moments import averages


def _brute(m, v, n):
    """The three averages by an n^K product rule over η itself (an independent reference)."""
    x, w = np.polynomial.hermite.hermgauss(n)
    x, w = x * np.sqrt(2.0), w / np.sqrt(np.pi)
    k = m.shape[-1]
    eps = np.array(list(itertools.product(x, repeat=k)))
    weight = np.prod(np.array(list(itertools.product(w, repeat=k))), -1)
    eta = m[:, None, :] + np.sqrt(v)[:, None, :] * eps
    p = softmax(eta, -1)
    return logsumexp(eta, -1) @ weight, np.einsum("rsk,s->rk", p, weight), np.einsum("rsk,s->rk", p * (1 - p), weight)


def _margins(k, rows=40, seed=0, widest=1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 2.0, (rows, k)), rng.uniform(0.01, widest, (rows, k))


@pytest.mark.parametrize("k, n, tol", [(2, 180, 1e-13), (3, 80, 1e-10), (4, 30, 5e-5)])
def test_the_product_rule_over_differences_matches_a_fine_rule_over_the_margins(k, n, tol):
    m, v = _margins(k, rows=40 if k < 4 else 8)
    for got, want in zip(averages(m, v), _brute(m, v, n)):
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_shifting_every_margin_shifts_lse_and_leaves_p_alone(k):
    m, v = _margins(k, rows=12)
    lse, p, q = averages(m, v)
    shifted = averages(m + 3.7, v)
    np.testing.assert_allclose(shifted[0], lse + 3.7, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shifted[1], p, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shifted[2], q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("k, tol", [(2, 1e-12), (3, 1e-10), (4, 1e-6)])
def test_permuting_the_classes_permutes_the_probabilities(k, tol):
    """Each row integrates relative to its own largest mean, the other classes in their order: the
    answer depends on that order only through the rule's error (the grid turns with the Cholesky
    factor of the differences)."""
    m, v = _margins(k, rows=12, seed=3)
    order = np.roll(np.arange(k), 1)
    lse, p, q = averages(m, v)
    lse2, p2, q2 = averages(m[:, order], v[:, order])
    np.testing.assert_allclose(lse2, lse, rtol=0, atol=tol)
    np.testing.assert_allclose(p2, p[:, order], rtol=0, atol=tol)
    np.testing.assert_allclose(q2, q[:, order], rtol=0, atol=tol)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_probabilities_sum_to_one_and_the_curvature_lies_in_zero_to_p(k):
    m, v = _margins(k, rows=30, seed=5, widest=4.0)
    _, p, q = averages(m, v)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert (q >= 0).all() and (q <= p + 1e-15).all()


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_curvature_keeps_its_precision_when_one_class_dominates(k):
    """p(1 − p) is summed from the other classes' terms, not as p − p²: near p = 1 it keeps its
    relative precision (the others' share (K − 1)e^−30 ≈ 9.4e-14 per class 30 below the first)."""
    m, v = np.zeros((1, k)), np.full((1, k), 1e-6)
    m[0, 0] = 30.0
    _, p, q = averages(m, v)
    rest = (k - 1) * np.exp(-30.0)
    np.testing.assert_allclose(q[0, 0], rest / (1 + rest) ** 2, rtol=1e-4)
    np.testing.assert_allclose(q[0, 1:], np.exp(-30.0) * (1 + rest - np.exp(-30.0)) / (1 + rest) ** 2, rtol=1e-4)


def test_one_class_is_exact_and_the_term_alone_is_the_same_term():
    m, v = _margins(1)
    lse, p, q = averages(m, v)
    np.testing.assert_array_equal(lse, m[:, 0])
    assert (p == 1).all() and (q == 0).all()
    m, v = _margins(3)
    assert averages(m, v, derivatives=False)[1] is None
    np.testing.assert_array_equal(averages(m, v, derivatives=False)[0], averages(m, v)[0])


def test_lead_axes_and_chunks_give_the_rows_alone(monkeypatch):
    m, v = _margins(3, rows=24, seed=7)
    whole = averages(m, v)
    monkeypatch.setattr(softmax_moments, "BLOCK", 3 * softmax_moments.nodes_per_axis(3) ** 2)
    chunked = averages(m.reshape(4, 6, 3), v.reshape(4, 6, 3))
    for a, b in zip(chunked, whole):  # the same sums, up to the matrix product's blocking
        np.testing.assert_allclose(a.reshape(b.shape), b, rtol=1e-14, atol=1e-15)


def test_wide_margins_go_to_the_fixed_points_and_stay_finite():
    """A margin with sd 300 would overflow the separable products (e^{L ε} at ε ≈ 12): that row is
    averaged over the fixed draws in the log domain, the others keep the product rule."""
    m, v = _margins(3, rows=6, seed=9)
    narrow = averages(m, v)
    v[2, 1] = 9e4
    lse, p, q = averages(m, v)
    assert np.isfinite(lse).all() and np.isfinite(p).all() and np.isfinite(q).all()
    keep = np.arange(6) != 2
    np.testing.assert_allclose(lse[keep], narrow[0][keep], rtol=1e-14)
    draws, weights = softmax_moments.fixed_points(3)
    eta = m[2, :, None] + np.sqrt(v[2])[:, None] * draws
    np.testing.assert_allclose(lse[2], logsumexp(eta, 0) @ weights, rtol=1e-12)


def test_many_classes_average_the_same_quasi_random_points_every_call():
    """K = 6: 2048 scrambled Sobol points, within 3e-4 of a 10^6-node product rule (4096
    pseudo-random draws erred by about 5e-3)."""
    m, v = _margins(6, rows=5, seed=11)
    first, second = averages(m, v), averages(m.copy(), v.copy())
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    for got, want in zip(first, _brute(m, v, 10)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-3)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_exact_margins_give_the_softmax_itself(k):
    """v = 0 on every class (a row whose covariates are all zero) has a singular covariance of the
    differences: the averages are then lse(m), softmax(m) and its p(1 − p), not a LinAlgError."""
    m = np.linspace(-0.4, 0.5, k)[None, :]
    lse, p, q = averages(m, np.zeros_like(m))
    np.testing.assert_allclose(lse, logsumexp(m, -1), rtol=1e-14)
    np.testing.assert_allclose(p, softmax(m, -1), rtol=1e-13)
    np.testing.assert_allclose(q, softmax(m, -1) * (1 - softmax(m, -1)), rtol=1e-13)


def test_the_factor_of_the_differences_is_lapacks_where_lapack_can_factor():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(30, 3, 3))
    cov = a @ a.transpose(0, 2, 1)
    np.testing.assert_allclose(softmax_moments.semidefinite_cholesky(cov), np.linalg.cholesky(cov), rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_margins_just_narrow_enough_for_the_products_give_finite_probabilities(k):
    """Exponents up to `WIDE` (e^600) at the nodes: e^{d_j} times the rest of the total would
    overflow (e^1200); p_j and 1 − p_j are formed as ratios to the total first."""
    x, _ = softmax_moments._axis(softmax_moments.nodes_per_axis(k))
    m = np.zeros((1, k))

    def exponent(v):  # the largest exponent of the separable products, which `WIDE` bounds
        return np.abs(softmax_moments._differences(m, np.full((1, k), v))[2]).sum(-1).max() * np.abs(x).max()
    v = np.full((1, k), (0.99 * softmax_moments.WIDE / exponent(1.0)) ** 2)
    assert 0.98 * softmax_moments.WIDE < exponent(v[0, 0]) <= softmax_moments.WIDE  # the product rule runs
    lse, p, q = averages(m, v)
    assert np.isfinite(lse).all() and np.isfinite(p).all() and np.isfinite(q).all()
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-12)
    assert (q >= 0).all() and (q <= p + 1e-15).all()
