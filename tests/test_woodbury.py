"""Woodbury: a single Gaussian vector read through N < D rows (`X @ w`, D > N) is solved in data
space — q's moments and entropy from the N × N matrix I + S X P⁻¹ Xᵀ S — and must equal the
dense D × D solve it replaces."""

import numpy as np
import pytest

import ppl
from ppl.families import MvNormal
from ppl.families.base import chol_inverse
from ppl.infer import Options, build_problem, run
from ppl.infer.low_rank import GaussianSum

from model_texts import LOGISTIC


def random_sum(n=7, d=25, seed=0, zero_rows=2):
    rng = np.random.default_rng(seed)
    family = MvNormal(d)
    base = family.natural(mean=rng.normal(size=d), precision=np.diag(rng.uniform(0.5, 2.0, d)))[None]
    tau = rng.uniform(0.1, 3.0, n)
    tau[:zero_rows] = 0.0  # rows outside a minibatch carry no precision
    return family, GaussianSum(base, [(rng.normal(size=(n, d)), rng.normal(size=n), tau)])


def test_the_low_rank_solve_is_the_dense_solve():
    family, total = random_sum()
    natural, moments, entropy = total.solve(family)
    np.testing.assert_allclose(natural, total.dense(), rtol=1e-14)
    np.testing.assert_allclose(moments, family.to_mean(natural), rtol=1e-10, atol=1e-10)
    assert entropy == pytest.approx(float(family.entropy(natural)[0]), rel=1e-12)


def test_a_dense_base_precision_or_too_many_rows_falls_back_to_the_dense_solve():
    family, total = random_sum()
    base = total.dense_part.copy()
    base[0, family.dim + 1] = base[0, family.dim + family.dim] = -0.1  # an off-diagonal pair
    assert GaussianSum(base, total.parts).solve(family) is None
    family, wide = random_sum(n=30, d=25)
    assert wide.solve(family) is None


def test_a_diagonal_precision_is_inverted_as_such():
    rng = np.random.default_rng(1)
    family = MvNormal(6)
    natural = family.natural(mean=rng.normal(size=(3, 6)), precision=np.eye(6) * rng.uniform(1, 2, (3, 1, 6)))
    mean, cov = family.mean_cov(natural)
    _, prec = family._split(natural)
    np.testing.assert_allclose(cov, chol_inverse(prec), rtol=1e-14)
    np.testing.assert_allclose(mean, np.einsum("...ij,...j->...i", cov, natural[..., :6]), rtol=1e-14)


@pytest.mark.parametrize("annotation", ["@ncvmp", "@cvi(samples=0, step=0.7, kappa=0)", "@jaakkola"])
def test_d_greater_than_n_logistic_regression_runs_the_dense_iterates(annotation):
    rng = np.random.default_rng(2)
    n, d = 12, 60
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    x[:, 0] = 1.0
    data = {"X": x, "y": (rng.random(n) < 0.5).astype(int)}
    model = ppl.compile(LOGISTIC + " " + annotation)
    dataset = model.bind(data)
    runs = []
    for low_rank in (True, False):
        problem = build_problem(model.checked, dataset, model.analyze(dataset))
        assert problem.low_rank == ("w",)
        if not low_rank:
            problem.low_rank = ()
        runs.append(run(problem, Options(seed=0, max_iter=15, tol=1e-300)))
    fast, dense = runs
    common = min(len(fast.trace), len(dense.trace))  # either may stop once round-off repeats the ELBO
    assert common >= 5
    np.testing.assert_allclose(fast.trace[:common], dense.trace[:common], rtol=1e-10)
    np.testing.assert_allclose(fast.state.moments("w"), dense.state.moments("w"), rtol=1e-8, atol=1e-10)
