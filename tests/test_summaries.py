"""Summaries without heavy sampling: Wishart entry quantiles (exact on the diagonal, by quadrature
off it) and the JSON writer's check for non-finite numbers."""

import json

import numpy as np
import pytest
from scipy import integrate, special, stats

from ppl.families import Wishart
from ppl.families import wishart_entry
from ppl.report.outputs import _finite

QS = (0.025, 0.5, 0.975)


def wishart_case():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 3, 3))
    scale = a @ a.transpose(0, 2, 1) / 3 + 0.1 * np.eye(3)
    scale[0] = [[1.0, 0.95, 0.0], [0.95, 1.0, 0.0], [0.0, 0.0, 2.0]]  # strongly correlated entries
    dof = np.array([3.5, 5.0, 20.0, 300.0])
    family = Wishart(3)
    return family, family.natural(dof=dof, scale=scale), scale, dof


def test_diagonal_quantiles_are_scaled_chi_square():
    family, nat, scale, dof = wishart_case()
    q = family.quantiles(nat, QS)
    for k in range(4):
        for i in range(3):
            expected = scale[k, i, i] * stats.chi2.ppf(QS, dof[k])
            np.testing.assert_allclose(q[:, k, i, i], expected, rtol=1e-10)


def test_off_diagonal_quantiles_match_matrix_draws():
    """Within 0.02 sd of the entry against 400,000 Bartlett draws of whole matrices (the Monte
    Carlo error of a 2.5% quantile is about 0.004 sd here); symmetric."""
    family, nat, _, _ = wishart_case()
    q = family.quantiles(nat, QS)
    reference = np.quantile(family.sample(nat, np.random.default_rng(7), 400_000), QS, axis=0)
    assert np.max(np.abs(q - reference) / family.sd(nat)) < 0.02
    np.testing.assert_array_equal(q, np.swapaxes(q, -1, -2))


def entry_density(y, rho, nu):
    """Closed-form density of c₊A − c₋B, A, B ~ χ²_ν, c± = (1 ± ρ)/2: the difference of two
    Gamma(ν/2) variables of rates λ₁ = 1/(1 + ρ), λ₂ = 1/(1 − ρ), through a Bessel function."""
    m, l1, l2 = nu / 2, 1 / (1 + rho), 1 / (1 - rho)
    beta = l1 + l2
    log = (m * np.log(l1 * l2) - special.gammaln(m) - 0.5 * np.log(np.pi) + (m - 0.5) * np.log(abs(y) / beta)
           - (l1 if y > 0 else l2) * abs(y) + np.log(special.kve(m - 0.5, beta * abs(y) / 2)))
    return np.exp(log)


def entry_cdf(y, rho, nu):
    """P(Y ≤ 0) = I_{c₋}(ν/2, ν/2), then the density integrated from 0 by `scipy.integrate.quad`."""
    if rho < 0:
        return 1 - entry_cdf(-y, -rho, nu)
    part = integrate.quad(entry_density, min(0, y), max(0, y), args=(rho, nu), epsabs=1e-15, epsrel=1e-13,
                          limit=500)[0]
    return special.betainc(nu / 2, nu / 2, (1 - rho) / 2) + np.sign(y) * part


@pytest.mark.parametrize("nu", [1.2, 2.0, 3.5, 10.0, 60.0])
def test_entry_cdf_matches_the_integrated_closed_form_density(nu):
    """Both quadratures (over G for |ρ| ≤ 0.7, over Z above) against an independent computation,
    from the far left to the far right tail, both signs of ρ and y; within 1e-9 in probability."""
    for rho in (0.0, 0.1, 0.5, 0.69, 0.71, 0.9, 0.99, -0.3, -0.8):
        mean, sd = rho * nu, np.sqrt(nu * (1 + rho**2))
        ys = np.append(mean + sd * np.array([-2.0, -0.3, 0.5, 2.0, 3.5]), [1e-3 * sd, -1e-3 * sd])
        got, dens = wishart_entry.cdf_pdf(ys, rho, nu)
        expected = [entry_cdf(y, rho, nu) for y in ys]
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, err_msg=f"rho={rho}")
        step = 1e-5 * sd  # the density is the derivative of the CDF
        above, below = wishart_entry.cdf_pdf(ys + step, rho, nu)[0], wishart_entry.cdf_pdf(ys - step, rho, nu)[0]
        numeric = (above - below) / (2 * step)
        np.testing.assert_allclose(dens, numeric, rtol=1e-4, atol=1e-9)


def test_entry_quantiles_invert_the_cdf_and_mirror_in_rho():
    rng = np.random.default_rng(3)
    rho, nu = rng.uniform(-0.999, 0.999, 300), rng.uniform(1.5, 400, 300)
    q = wishart_entry.quantiles(QS, rho, nu)
    assert q.shape == (3, 300)
    levels = np.broadcast_to(np.array(QS)[:, None], q.shape)
    np.testing.assert_allclose(wishart_entry.cdf_pdf(q, rho, nu)[0], levels, rtol=0, atol=1e-12)
    np.testing.assert_allclose(wishart_entry.quantiles(QS[::-1], -rho, nu), -q, rtol=1e-9, atol=1e-9)
    assert wishart_entry.quantiles([0.5], 0.0, 7.0)[0] == pytest.approx(0.0, abs=1e-12)  # symmetric at ρ = 0


def test_json_non_finite_become_null_and_long_finite_lists_stay():
    finite = [[float(i), 2.0] for i in range(40)]
    doc = {"a": finite, "b": [1.0] * 20 + [np.inf], "c": np.nan, "d": ["x"] * 30}
    out = _finite(doc)
    assert out["a"] is finite
    assert out["b"][-1] is None and out["c"] is None and out["d"] == ["x"] * 30
    json.dumps(out, allow_nan=False)


@pytest.mark.parametrize("dof", [2.5, 40.0])
def test_one_dimensional_wishart_quantiles_are_gamma(dof):
    family = Wishart(1)
    nat = family.natural(dof=np.array([dof]), scale=np.array([[[2.0]]]))
    q = family.quantiles(nat, QS)
    np.testing.assert_allclose(q[:, 0, 0, 0], stats.gamma.ppf(QS, dof / 2, scale=4.0), rtol=1e-10)
