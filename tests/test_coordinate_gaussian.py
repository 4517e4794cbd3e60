"""A Gaussian vector read coordinate by coordinate (a GP's `f[n]`) is held in precision space by
its sites (`CoordinateGaussian`: Λ = c P₀ + diag t, its Cholesky factor and inverse, no D × D
covariance during the run) and must equal the dense solve it replaces."""

import numpy as np
import pytest

import ppl
from ppl.families import MvNormal
from ppl.infer.coordinate_gaussian import CoordinateGaussian
from ppl.infer.low_rank import GaussianSum

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def coordinate_sum(d=12, n=20, seed=0, scale=1.0, value=1.0):
    """A dense prior N(m, P₀⁻¹) and n coordinate reads (rows value·e_k, k repeating) with sites (a, τ)."""
    rng = np.random.default_rng(seed)
    family = MvNormal(d)
    a = rng.normal(size=(d, d))
    base = family.natural(mean=rng.normal(size=d), precision=a @ a.T / d + np.eye(d))[None]
    rows = np.zeros((n, d))
    rows[np.arange(n), rng.integers(0, d, n)] = value
    return family, GaussianSum(base, [(rows, rng.normal(size=n), rng.uniform(0.1, 2.0, n))], scale)


@pytest.mark.parametrize("scale, value", [(1.0, 1.0), (0.4, -2.5)])
def test_the_coordinate_solve_is_the_dense_solve(scale, value):
    family, total = coordinate_sum(scale=scale, value=value)
    q = total.solve(family)
    assert isinstance(q, CoordinateGaussian) and q.factored is total
    natural = total.dense()
    np.testing.assert_allclose(q.natural(), natural, rtol=1e-14)
    mean, cov = (a[0] for a in family.mean_cov(natural))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(q.var, np.diagonal(cov), rtol=1e-11)
    np.testing.assert_allclose(q.moments(), family.to_mean(natural), rtol=1e-11, atol=1e-12)
    assert q.entropy == pytest.approx(float(family.entropy(natural)[0]), rel=1e-12)
    rows = np.random.default_rng(5).normal(size=(4, 1, family.dim))  # margins of dense rows: cᵀΣc
    np.testing.assert_allclose(q.quadratic(rows), np.einsum("...i,ij,...j->...", rows, cov, rows), rtol=1e-10)
    unit = total.parts[0][0][:, None, :]  # the coordinate rows themselves: value² Var(f_k)
    np.testing.assert_allclose(q.quadratic(unit), np.einsum("...i,ij,...j->...", unit, cov, unit), rtol=1e-11)
    np.testing.assert_allclose(q.linear(unit), unit @ mean, rtol=1e-11, atol=1e-12)


def test_the_prior_error_from_the_sites_is_the_trace_with_the_covariance():
    """E[(f − m)ᵀP₀(f − m)] = tr(P₀Σ) + (μ − m)ᵀP₀(μ − m), where the held form reads tr(P₀Σ) as
    (D − Σ t_d Var f_d)/c: the same number as the dense covariance's trace."""
    family, total = coordinate_sum(scale=0.7)
    q = total.solve(family)
    mean, cov = (a[0] for a in family.mean_cov(total.dense()))
    prior = q.prior.p
    m = np.random.default_rng(3).normal(size=family.dim)
    expected = np.trace(prior @ cov) + (mean - m) @ prior @ (mean - m)
    assert q.prior_error(m) == pytest.approx(expected, rel=1e-11)


def test_draws_have_the_mean_and_covariance_of_q():
    """The draws are μ + zL⁻¹, linear in z: fed the unit vectors, their outer products sum to Σ."""
    family, total = coordinate_sum()
    q = total.solve(family)

    class Units:
        def standard_normal(self, shape):
            return np.eye(shape[1])

    theta = q.sample(Units(), family.dim) - q.mean
    np.testing.assert_allclose(theta.T @ theta, family.mean_cov(total.dense())[1][0], rtol=1e-11, atol=1e-13)


def test_no_cholesky_factor_or_rows_that_read_two_coordinates_fall_back_to_the_dense_solve():
    family, total = coordinate_sum()
    rows, a, tau = total.parts[0]
    assert GaussianSum(total.base, [(rows, a, np.full_like(tau, -50.0))]).solve(family) is None  # Λ indefinite
    mixed = rows.copy()
    mixed[0, :2] = 1.0
    assert GaussianSum(total.base, [(mixed, a, tau)]).solve(family) is None
    assert GaussianSum(total.base).solve(family) is None  # no sites: the dense prior as it is


def test_the_prior_alone_is_held_at_the_start():
    """At the start (ppl.infer.initialise) q is the prior with no sites yet: held all the same,
    with the prior's mean and variances, and tr(P₀Σ) = D."""
    family, total = coordinate_sum()
    q = GaussianSum(total.base).solve(family, start=True)
    mean, cov = (a[0] for a in family.mean_cov(total.base))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(q.var, np.diagonal(cov), rtol=1e-11)
    assert q.prior_error(mean) == pytest.approx(family.dim, rel=1e-12)


def test_a_gaussian_process_is_held_by_its_sites_and_fits_as_the_dense_solve(monkeypatch):
    """models/gp_classification.vim from the API: q(f) is held (no D × D covariance), and its ELBO,
    means and sds equal the dense solve's (the held form switched off) along plain sweeps."""
    model = ppl.load(ROOT / "models" / "gp_classification.vim")
    data = ROOT / "models" / "gp_classification.csv"
    held = model.infer(data, seed=0, accelerate=False)
    assert type(held["f"]).__name__ == "KernelMarginal"
    monkeypatch.setattr(CoordinateGaussian, "of", classmethod(lambda cls, *args, **kwargs: None))
    dense = model.infer(data, seed=0, accelerate=False)
    assert type(dense["f"]).__name__ == "FamilyMarginal"
    assert held.iterations == dense.iterations
    assert held.elbo == pytest.approx(dense.elbo, rel=1e-10)
    np.testing.assert_allclose(held["f"].mean, dense["f"].mean, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(held["f"].sd, dense["f"].sd, rtol=1e-8)
