"""Summaries without heavy sampling: Wishart entry quantiles (exact on the diagonal, Monte Carlo of
two scalars off it) and the JSON writer's check for non-finite numbers."""

import json

import numpy as np
import pytest
from scipy import stats

from ppl.families import Wishart
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
    """Within 0.2 sd of the entry against 400,000 Bartlett draws of whole matrices."""
    family, nat, _, _ = wishart_case()
    q = family.quantiles(nat, QS)
    reference = np.quantile(family.sample(nat, np.random.default_rng(7), 400_000), QS, axis=0)
    assert np.max(np.abs(q - reference) / family.sd(nat)) < 0.2
    np.testing.assert_array_equal(q, np.swapaxes(q, -1, -2))
    np.testing.assert_array_equal(q, family.quantiles(nat, QS))  # fixed seed: reproducible


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
