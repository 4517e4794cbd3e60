"""A constant diagonal prior (`eye(D)`, `diag(v)`, scaled, summed) is read as its diagonal
(ppl.infer.diagonal) and reaches the data-space solve as a `Diagonal` message: the same results
as the dense D × D path it replaces, and no D × D array in a D > N run."""

import tracemalloc

import numpy as np
import pytest

import ppl
from ppl.infer import build_problem
from ppl.infer.diagonal import constant_diagonal
from ppl.infer.factors.gaussian import covariance_to_precision
from ppl.infer.low_rank import Diagonal, GaussianSum
from ppl.infer.plates import Environment, Plate

PRIOR = """
data X: real[N, D] from x1..xD
data y: bool[N]
data v: real[D]
data m0: real[D]
w ~ MvNormal({mean}, {arg})
y ~ Bernoulli(logistic(X @ w))"""

FORMS = {  # prior argument -> its precision's diagonal, v and D given
    "eye(D)": lambda v: np.ones_like(v),
    "precision=2.5 * eye(D)": lambda v: np.full_like(v, 2.5),
    "precision=eye(D) / 4": lambda v: np.full_like(v, 0.25),
    "precision=diag(v)": lambda v: v,
    "precision=diag(v) + 2 * eye(D) - eye(D)": lambda v: v + 1,
    "cov=3 * eye(D)": lambda v: np.full_like(v, 1 / (3 + 3e-6)),  # with covariance_to_precision's jitter
    "cov=diag(v)": lambda v: 1 / (v + 1e-6 * np.mean(v)),
}


def problem_data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    return {"X": x, "y": (rng.random(n) < 0.5).astype(int), "v": rng.uniform(0.5, 2.0, d),
            "m0": rng.normal(size=d) * 0.3}


@pytest.mark.parametrize("arg", FORMS)
def test_the_diagonal_is_read_from_the_expression_as_the_dense_matrix_has_it(arg):
    """The recognised diagonal equals the diagonal of the densely evaluated matrix, and the factor
    keeps no D × D precision until something asks for it."""
    data = problem_data(5, 8)
    model = ppl.compile(PRIOR.format(mean="zeros(D)", arg=arg))
    dataset = model.bind(data)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    prior = next(f for f in problem.factors if f.factor.target.name == "w")
    assert prior.precision._value is None
    np.testing.assert_allclose(prior.precision.diagonal, FORMS[arg](data["v"]), rtol=1e-15)
    expr = prior.args["cov" if arg.startswith("cov") else "precision"]
    dense = prior.data(expr)  # the matrix as the language evaluates it
    np.testing.assert_array_equal(dense, np.diag(np.diagonal(dense)))
    if arg.startswith("cov"):
        dense = covariance_to_precision(dense)[0]
    np.testing.assert_allclose(prior.precision.diagonal, np.diagonal(dense), rtol=1e-12)
    np.testing.assert_allclose(prior.precision.value[0], np.diag(prior.precision.diagonal), rtol=0)


@pytest.mark.parametrize("text", ["S", "S * eye(D)", "eye(D) * S", "eye(D) + S", "diag(m0) * diag(v)"])
def test_a_matrix_not_diagonal_by_construction_is_left_to_the_dense_path(text):
    model = ppl.compile("data S: real[D, D]\ndata m0: real[D]\ndata v: real[D]\nw ~ MvNormal(zeros(D), " + text + ")")
    rng = np.random.default_rng(0)
    dataset = model.bind({"S": np.eye(3) + 0.1, "m0": rng.normal(size=3), "v": np.ones(3)})
    env = Environment(model.checked, dataset)
    factor = model.checked.factors[0]
    assert constant_diagonal(factor.args["precision"], Plate(factor, env)) is None


@pytest.mark.parametrize("n, d", [(9, 40), (40, 9)])
@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola"])
@pytest.mark.parametrize("arg", ["eye(D)", "precision=diag(v) + 2 * eye(D) - eye(D)", "cov=diag(v)"])
def test_the_diagonal_prior_gives_the_results_of_the_dense_prior(arg, rule, n, d, monkeypatch):
    """D > N (data space) and N > D (dense solve), zero and non-zero prior mean: ELBO, trace, means,
    sds of the run with the prior read as a diagonal equal those with the prior evaluated as a
    dense D × D matrix (the recognition switched off) to 1e-10."""
    data = problem_data(n, d, seed=3)
    runs = []
    for mean in ("zeros(D)", "m0"):
        model = ppl.compile(PRIOR.format(mean=mean, arg=arg))
        fast = model.infer(data, seed=0, methods={"y": rule}, accelerate=False)
        with monkeypatch.context() as patch:
            patch.setattr("ppl.infer.factors.gaussian.constant_diagonal", lambda expr, plate: None)
            dense = model.infer(data, seed=0, methods={"y": rule}, accelerate=False)
        runs.append(fast.elbo)
        assert fast.iterations == dense.iterations
        np.testing.assert_allclose(fast.trace, dense.trace, rtol=1e-10)
        np.testing.assert_allclose(fast["w"].mean, dense["w"].mean, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast["w"].sd, dense["w"].sd, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fast.priors["w"], dense.priors["w"], rtol=1e-12, atol=1e-15)
    assert runs[0] != pytest.approx(runs[1], rel=1e-6)  # the prior mean was read


def test_diagonal_arithmetic_is_the_dense_arithmetic():
    rng = np.random.default_rng(1)
    a, b = Diagonal(rng.normal(size=4), rng.uniform(1, 2, 4)), Diagonal(rng.normal(size=4), rng.uniform(1, 2, 4))
    dense = rng.normal(size=(1, 20))
    np.testing.assert_allclose((0.3 * a + b).dense(), 0.3 * a.dense() + b.dense(), rtol=1e-15)
    np.testing.assert_allclose(a + dense, a.dense() + dense, rtol=1e-15)
    np.testing.assert_allclose(dense + a, a.dense() + dense, rtol=1e-15)
    total = GaussianSum(a).scaled(0.4) + GaussianSum(a).scaled(0.6)  # a damped step keeps the same diagonal
    assert total.base is a and total.scale == pytest.approx(1.0)
    np.testing.assert_allclose((GaussianSum(a) + GaussianSum(b)).dense(), a.dense() + b.dense(), rtol=1e-15)


@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola", "cvi"])
def test_a_wide_run_never_allocates_a_d_by_d_array(rule):
    """N = 20, D = 4000 (D² doubles: 128 MB): the whole `infer` call, summary included, peaks at a
    few N × D arrays (0.64 MB each); a single D × D array would be 20× the bound."""
    n, d = 20, 4000
    data = problem_data(n, d)
    model = ppl.compile(PRIOR.format(mean="zeros(D)", arg="eye(D)"))
    model.infer(problem_data(3, 5), seed=0, methods={"y": rule}).summary()  # imports (pandas), off the count
    tracemalloc.start()
    try:
        post = model.infer(data, seed=0, methods={"y": rule})
        post.summary()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(post["w"]).__name__ == "KernelMarginal"
    bound = 10 * n * d * 8  # 6.4 MB
    assert 20 * bound == d * d * 8
    assert peak < bound, f"{peak / 1e6:.1f} MB"


def test_the_data_space_shortcuts_equal_the_dense_covariance():
    """KernelGaussian's O(N³) forms against Σ = Λ⁻¹ formed densely: the margins of its own rows
    (diag G − colsum((L⁻¹ S G)²), mean R m₀ + G b), tr(P₀ Σ) and Σ P₀ E[(w − m₀)²] for the prior's diagonal P₀ (N − tr B⁻¹ form) at a
    damped scale, the variances from one GEMM; and a second solve on the same rows and prior
    reuses G₀ = R P₀⁻¹ Rᵀ and gives the same q as a fresh one."""
    from ppl.families import MvNormal
    rng = np.random.default_rng(7)
    n, d = 6, 30
    family = MvNormal(d)
    prior = Diagonal(rng.normal(size=d), rng.uniform(0.5, 2.0, d))
    rows = rng.normal(size=(n, d))
    total = GaussianSum(prior, [(rows, rng.normal(size=n), rng.uniform(0.1, 3.0, n))]).scaled(0.7)
    q = total.solve(family)
    mean, cov = (a[0] for a in family.mean_cov(total.dense()))
    np.testing.assert_allclose(q.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q.quadratic(rows[:, None, :]), np.einsum("ni,ij,nj->n", rows, cov, rows)[:, None],
                               rtol=1e-10)
    np.testing.assert_allclose(q.weighted_variance(prior.p), np.sum(prior.p * np.diagonal(cov)), rtol=1e-12)
    np.testing.assert_allclose(q.weighted_variance(prior.p.copy()), np.sum(prior.p * np.diagonal(cov)), rtol=1e-12)
    np.testing.assert_allclose(q.var, np.diagonal(cov), rtol=1e-10)
    np.testing.assert_allclose(q.linear(rows[:, None, :]), (rows @ mean)[:, None], rtol=1e-10, atol=1e-12)
    expected = np.sum(prior.p * ((mean - prior.h / prior.p) ** 2 + np.diagonal(cov)))
    assert q.prior_error() == pytest.approx(expected, rel=1e-10)  # Σ P₀ E[(w − m₀)²] from N-vectors
    gram = total.prior.gram
    again = GaussianSum(prior, [(rows, rng.normal(size=n), rng.uniform(0.1, 3.0, n))])
    reused, fresh = again.solve(family, total), GaussianSum(prior, again.parts).solve(family)
    assert again.prior is total.prior and again.prior.gram is gram  # R P₀⁻¹ Rᵀ formed once
    np.testing.assert_allclose(reused.mean, fresh.mean, rtol=1e-12)
    assert reused.entropy == pytest.approx(fresh.entropy, rel=1e-13)
