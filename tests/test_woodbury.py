"""Woodbury: a single Gaussian vector read through N < D rows (`X @ w`, D > N) is solved and held
in data space (`KernelGaussian`: q's mean, variances, margins and entropy from the N × N matrix
I + S X P⁻¹ Xᵀ S, no D × D array during the run) and must equal the dense D × D solve it replaces."""

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
    q = total.solve(family)
    assert q.factored is total and q.u.shape == (7, 25)  # N × D, not D × D
    natural = total.dense()
    np.testing.assert_allclose(q.natural(), natural, rtol=1e-14)
    np.testing.assert_allclose(q.moments(), family.to_mean(natural), rtol=1e-10, atol=1e-10)
    assert q.entropy == pytest.approx(float(family.entropy(natural)[0]), rel=1e-12)
    mean, cov = (a[0] for a in family.mean_cov(natural))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q.var, np.diagonal(cov), rtol=1e-10)
    rows = np.random.default_rng(5).normal(size=(4, 1, 25))  # margins of new rows: cᵀΣc
    np.testing.assert_allclose(q.quadratic(rows), np.einsum("...i,ij,...j->...", rows, cov, rows), rtol=1e-10)


def test_draws_in_data_space_have_the_covariance_of_q():
    """The sampler is linear in its normals, θ = A (u, δ): fed the unit vectors one draw each
    (D + N draws), the draws are the columns of A, and Σ_draws (θ − μ)(θ − μ)ᵀ = A Aᵀ must be Σ."""
    family, total = random_sum()
    q = total.solve(family)
    d, n = family.dim, len(q.tau)

    class Units:  # standard_normal((draws, D)) then ((draws, N)): [I; 0] then [0; I]
        calls = 0

        def standard_normal(self, shape):
            Units.calls += 1
            return np.eye(d + n)[:, :d] if Units.calls == 1 else np.eye(d + n)[:, d:]

    theta = q.sample(Units(), d + n) - q.mean
    cov = family.mean_cov(total.dense())[1][0]
    np.testing.assert_allclose(theta.T @ theta, cov, rtol=1e-10, atol=1e-12)


def test_a_prior_with_no_rows_yet_is_held_in_data_space():
    family, total = random_sum()
    q = GaussianSum(total.dense_part).solve(family)
    mean, cov = (a[0] for a in family.mean_cov(total.dense_part))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-13)
    np.testing.assert_allclose(q.var, np.diagonal(cov), rtol=1e-13)


@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_the_variances_of_a_prior_with_no_rows_are_the_general_formulas_to_the_bit(scale):
    """With no rows `var_at` returns 1/p without the einsum over no rows: the general path's
    1/p − |U e_d|² (U of no rows) bit for bit, for every element and for a few."""
    family, total = random_sum()
    q = GaussianSum(total.dense_part, scale=scale).solve(family)
    assert not len(q.tau)
    u = ((q.inverse * q.root) @ q.rows) / q.p
    general = 1.0 / q.p - np.einsum("nd,nd->d", u, u)
    columns = np.array([0, 3])
    for fast, slow in ((q.var_at(slice(None)), general), (q.var_at(columns), general[columns])):
        assert np.array_equal(fast.view(np.int64), slow.view(np.int64))


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
        runs.append(run(problem, Options(seed=0, max_iter=15, tol=1e-300, accelerate=False)))  # plain iterates
    fast, dense = runs
    common = min(len(fast.trace), len(dense.trace))  # either may stop once round-off repeats the ELBO
    assert common >= 5
    np.testing.assert_allclose(fast.trace[:common], dense.trace[:common], rtol=1e-10)
    assert "w" in fast.state.kernel and "w" not in dense.state.kernel
    # 15 sweeps of round-off apart: entries of order 1 agree to 1e-9
    np.testing.assert_allclose(fast.state.moments("w"), dense.state.moments("w"), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola"])
def test_the_posterior_held_in_data_space_is_the_dense_posterior(rule, monkeypatch):
    """D > N (N = 9, D = 40) from the API: ELBO, means and sds of q(w) held in data space equal
    those of the dense solve (Woodbury switched off) to 1e-10, and the summary reads them. Plain
    sweeps both, so that the two take the same path to round-off."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(9, 40)) / np.sqrt(40)
    data = {"X": x, "y": (rng.random(9) < 0.5).astype(int)}
    model = ppl.compile(LOGISTIC)
    fast = model.infer(data, seed=0, methods={"y": rule}, accelerate=False)
    assert type(fast["w"]).__name__ == "KernelMarginal"
    monkeypatch.setattr(GaussianSum, "solve", lambda self, *args, **kwargs: None)
    dense = model.infer(data, seed=0, methods={"y": rule}, accelerate=False)
    assert type(dense["w"]).__name__ == "FamilyMarginal"
    assert fast.iterations == dense.iterations
    assert fast.elbo == pytest.approx(dense.elbo, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(fast["w"].mean, dense["w"].mean, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fast["w"].sd, dense["w"].sd, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fast["w"].quantiles([0.05, 0.95]), dense["w"].quantiles([0.05, 0.95]), rtol=1e-9)
    np.testing.assert_allclose(fast["w"].natural, dense["w"].natural, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fast.summary()["sd"].to_numpy(), dense.summary()["sd"].to_numpy(), rtol=1e-9)


def test_a_damped_step_stays_factored_on_the_same_rows():
    family, total = random_sum()
    rows = total.parts[0][0]
    other = GaussianSum(total.dense_part, [(rows, total.parts[0][1] * 2, total.parts[0][2] * 3)])
    mixed = total.scaled(0.3) + other.scaled(0.7)
    assert len(mixed.parts) == 1  # the same rows merge: rank N, not 2N
    np.testing.assert_allclose(mixed.dense(), 0.3 * total.dense() + 0.7 * other.dense(), rtol=1e-12)


def test_the_wide_model_reaches_the_ncvmp_fixed_point_through_woodbury():
    """models/logistic_wide (N = 40, D = 400): at convergence q(w) is the prior times the sites
    computed from q's own margins, λ = (Xᵀ(g1 − m g2), −½(I − Xᵀ diag(g2) X)), with g1, g2 by
    adaptive quadrature (scipy; the margins are wide, v ≈ 5–12); and q was solved in data space."""
    import pandas as pd
    from scipy.integrate import quad
    from scipy.special import expit

    root = __import__("pathlib").Path(__file__).resolve().parents[1] / "models"
    table = pd.read_csv(root / "logistic_wide.csv")
    x, y = table.drop(columns="y").to_numpy(), table["y"].to_numpy(dtype=float)
    model = ppl.load(root / "logistic_wide.vim")
    dataset = model.bind(root / "logistic_wide.csv")
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    result = run(problem, Options(seed=0, tol=1e-13, max_iter=300))
    assert result.converged and result.state.factored["w"] is not None
    mean, cov = problem.families["w"].mean_cov(result.state.natural["w"])
    mean, cov = mean.reshape(-1), cov.reshape(400, 400)
    m, v = x @ mean, np.einsum("ni,ij,nj->n", x, cov, x)
    def expect(fn, mu, var):
        density = lambda e: np.exp(-0.5 * (e - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)  # noqa: E731
        return quad(lambda e: fn(e) * density(e), mu - 14 * np.sqrt(var), mu + 14 * np.sqrt(var),
                    points=[0.0], epsabs=1e-13, limit=200)[0]

    g1 = np.array([expect(lambda e, t=t: t - expit(e), a, b) for t, a, b in zip(y, m, v)])
    g2 = np.array([expect(lambda e: -expit(e) * expit(-e), a, b) for a, b in zip(m, v)])
    expected = np.concatenate([x.T @ (g1 - m * g2), (-0.5 * (np.eye(400) - (x.T * g2) @ x)).reshape(-1)])
    # an ELBO flat to 1e-13 leaves λ within ~1e-6 of the fixed point (the ELBO is quadratic there)
    np.testing.assert_allclose(result.state.natural["w"].reshape(-1), expected, atol=2e-6)


def test_a_product_with_as_many_rows_as_coefficients_reads_the_vector_whole():
    """N = D: `X @ w` is a contraction, not a coordinate read of w row by row (the bare-vector
    rule of a vectorised statement must not fire inside a product). The prior's E[log p(y)] is
    Σ_n E[log σ(±x_n·w)] with x_n·w ~ N(0, |x_n|²)."""
    from numpy.polynomial.hermite_e import hermegauss
    import ppl
    from ppl.infer import build_problem
    from ppl.infer.initialise import initialise
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 4))
    y = np.array([1, 0, 1, 1])
    model = ppl.compile("data X: real[N, D]\ndata y: bool[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                        "y ~ Bernoulli(logistic(X @ w))")
    dataset = model.bind({"X": x, "y": y})
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    term = problem.elbo_terms(initialise(problem, np.random.default_rng(0)))["E[log p(y)]"]
    nodes, weights = hermegauss(80)
    eta = np.sqrt((x ** 2).sum(axis=1))[:, None] * nodes[None]
    sign = np.where(y[:, None] > 0, 1.0, -1.0)
    assert term == pytest.approx(np.sum(-np.logaddexp(0, -sign * eta) @ (weights / weights.sum())), rel=1e-6)


@pytest.mark.parametrize("scale", [1.0, 0.4])
def test_the_largest_mean_shift_from_bounded_sds_is_the_exact_one(scale):
    """The stopping rule's max_d |μ_d − m_d| / sd_d read through the bounds 1/Λ_dd ≤ Var ≤ 1/P_d
    and the exact variance of the few elements the bounds leave open equals the ratio computed
    from every exact sd (the dense covariance), wherever the largest shift falls."""
    family, total = random_sum(n=7, d=60)
    q = total.scaled(scale).solve(family)
    sd = np.sqrt(np.diagonal(family.mean_cov(total.scaled(scale).dense())[1][0]))
    rng = np.random.default_rng(3)
    for shift in (rng.normal(size=60) * 1e-6, np.eye(60)[17] * 1e-3, rng.normal(size=60) * sd):
        exact = np.max(np.abs(shift) / np.maximum(sd, 1e-6 * (1 + np.abs(q.mean))))
        assert q.largest_shift(q.mean - shift) == pytest.approx(exact, rel=1e-10)
    np.testing.assert_allclose(q.var_at(np.array([0, 17, 59])), sd[[0, 17, 59]] ** 2, rtol=1e-10)
    assert q.largest_shift(q.mean) == 0.0
