"""What the engine computes once and reuses (ppl.infer.low_rank.DiagonalPrior: R P₀⁻¹ Rᵀ and R m₀
per rows array; a constant-parameter factor's η and A(η); a factor's read names and unit weights)
must follow what it depends on: new rows, new data of another size, new constants."""

import numpy as np
import pytest

import ppl
from ppl.families import MvNormal
from ppl.infer.low_rank import Diagonal, GaussianSum

from model_texts import LOGISTIC

GAMMA_POISSON = """
const a = 2.0
const b = 1.0
data y: int[N]
lam ~ Gamma(a, b)
y ~ Poisson(lam)
"""


def _wide(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    return {"X": x, "y": (rng.random(n) < 0.5).astype(int)}


def test_the_prior_cache_follows_the_rows_it_was_formed_for():
    """A solve on other rows after the prior cached G₀ and R m₀ of the first rows gives the q of a
    fresh prior, and its margins are those of the dense covariance."""
    rng = np.random.default_rng(3)
    d = 40
    family = MvNormal(d)
    mean, p = rng.normal(size=d), rng.uniform(0.5, 2.0, d)
    shared = Diagonal(p * mean, p, mean)
    first = GaussianSum(shared, [(rng.normal(size=(6, d)), rng.normal(size=6), rng.uniform(0.1, 2.0, 6))])
    q1 = first.solve(family)
    for n in (6, 9):  # the same number of rows and another
        rows = rng.normal(size=(n, d))
        total = GaussianSum(shared, [(rows, rng.normal(size=n), rng.uniform(0.1, 2.0, n))])
        again = total.solve(family, first)
        assert again.prior is q1.prior  # the prior's own checks and log|P₀| are reused...
        fresh = GaussianSum(Diagonal(p * mean, p, mean), total.parts).solve(family)
        dense_mean, cov = (a[0] for a in family.mean_cov(total.dense()))
        np.testing.assert_allclose(again.mean, fresh.mean, rtol=1e-12)  # ...its products with the rows are not
        np.testing.assert_allclose(again.mean, dense_mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(again.linear(rows[:, None]), (rows @ dense_mean)[:, None], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(again.quadratic(rows[:, None]), np.einsum("ni,ij,nj->n", rows, cov, rows)[:, None],
                                   rtol=1e-9)
        assert again.entropy == pytest.approx(fresh.entropy, rel=1e-13)


def test_a_prior_with_no_rows_reads_margins_through_the_prior_cache():
    """q = the prior (no rows yet): cᵀμ and cᵀΣc of fewer rows than D come from G₀ and R m₀."""
    rng = np.random.default_rng(4)
    d = 30
    family = MvNormal(d)
    mean, p = rng.normal(size=d), rng.uniform(0.5, 2.0, d)
    q = GaussianSum(Diagonal(p * mean, p, mean)).solve(family)
    rows = rng.normal(size=(7, 1, d))
    np.testing.assert_allclose(q.linear(rows), rows @ mean, rtol=1e-12)
    np.testing.assert_allclose(q.quadratic(rows), np.sum(rows ** 2 / p, -1), rtol=1e-12)


@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola"])
def test_one_model_refitted_to_data_of_another_size_gives_the_fresh_answer(rule):
    """D > N in data space: the same Model on 12 rows, then 8 rows of other data, then the 12 again:
    each fit equals a fit by a freshly compiled model (no cache outlives its data)."""
    model = ppl.compile(LOGISTIC)
    runs = []
    for n, seed in ((12, 0), (8, 1), (12, 0)):
        data = _wide(n, 50, seed)
        reused = model.infer(data, seed=0, methods={"y": rule}, accelerate=False)
        fresh = ppl.compile(LOGISTIC).infer(data, seed=0, methods={"y": rule}, accelerate=False)
        assert type(reused["w"]).__name__ == "KernelMarginal"
        assert reused.trace == fresh.trace
        np.testing.assert_array_equal(reused["w"].mean, fresh["w"].mean)
        runs.append(reused)
    assert runs[0].trace == runs[2].trace and runs[0].trace != runs[1].trace


def test_constant_parameters_are_read_once_per_model_and_follow_new_constants():
    """Gamma(a, b) prior, Poisson data: the exact posterior Gamma(a + Σy, b + N), under one constant
    and then another (`set`), on data of two sizes."""
    model = ppl.compile(GAMMA_POISSON)
    for a, y in ((2.0, [1, 4, 2]), (5.0, [0, 3, 3, 7, 1])):
        post = model.infer({"y": np.array(y)}, seed=0, set={"a": a})
        shape, rate = a + sum(y), 1.0 + len(y)
        assert post["lam"].mean == pytest.approx(shape / rate, rel=1e-12)
        assert post["lam"].sd == pytest.approx(np.sqrt(shape) / rate, rel=1e-12)


def test_a_restored_q_brings_back_its_version_and_no_version_is_given_twice():
    """`State.restore` (SQUAREM's rejected step) puts back λ, its cached moments and its version,
    so a cache keyed by that version holds again; every later update gets a version never seen."""
    from ppl.families import Normal
    from ppl.infer.state import State
    state = State({"x": Normal()}, {"x": (2,)})
    state.set("x", Normal().natural(mean=np.zeros(2), precision=np.ones(2)))
    first, moments, version = state.natural["x"], state.moments("x"), state.versions["x"]
    kept = state.keep(["x"])
    seen = {version}
    for shift in (1.0, 2.0):
        state.set("x", Normal().natural(mean=np.full(2, shift), precision=np.ones(2)))
        seen.add(state.versions["x"])
    state.restore(kept)
    assert state.natural["x"] is first and state.moments("x") is moments and state.versions["x"] == version
    state.set("x", Normal().natural(mean=np.full(2, 3.0), precision=np.ones(2)))
    assert state.versions["x"] not in seen and len(seen) == 3


def test_a_dirichlet_entropy_reads_the_moments_of_its_own_lambda_only():
    """H[q] from the state's cached E[log π] is the family's own, bit for bit; after a new λ, or
    moments given by a caller (a sampled schedule's draws), it is H of λ, not of stale moments."""
    from ppl.families import Dirichlet
    from ppl.infer.state import State

    family, rng = Dirichlet(4), np.random.default_rng(7)
    state = State({"pi": family}, {"pi": (3,)})
    first, second = rng.uniform(0.1, 5.0, (3, 4)), rng.uniform(0.1, 5.0, (3, 4))
    state.set("pi", first)
    state.moments("pi")
    assert state.entropy("pi") == float(family.entropy(first).sum())
    state.set("pi", second)
    assert state.entropy("pi") == float(family.entropy(second).sum())
    state.set("pi", first, moments=family.to_mean(second))
    assert state.entropy("pi") == float(family.entropy(first).sum())


@pytest.mark.parametrize("diagonal", [False, True])
def test_an_mvnormal_entropy_comes_with_its_moments_from_one_factor(diagonal):
    """One Cholesky factor of Λ gives the moments and H[q], bit for bit those of `to_mean` and
    `entropy`; a new λ, or moments given by a caller, are not read with an old entropy."""
    from ppl.infer.state import State

    family, rng = MvNormal(5), np.random.default_rng(8)
    naturals = []
    for _ in range(2):
        a = rng.normal(size=(5, 5))
        precision = np.diag(rng.uniform(0.5, 2.0, 5)) if diagonal else a @ a.T + 5 * np.eye(5)
        naturals.append(family.natural(mean=rng.normal(size=5), precision=precision)[None])
    state = State({"w": family}, {"w": (1,)})
    for nat in naturals:
        state.set("w", nat)
        assert np.array_equal(state.moments("w"), family.to_mean(nat))
        assert state.entropy("w") == float(family.entropy(nat).sum())
    state.set("w", naturals[0], moments=family.to_mean(naturals[1]))
    assert state.entropy("w") == float(family.entropy(naturals[0]).sum())


@pytest.mark.parametrize("index", [np.arange(6), np.array([2, 0, 1, 5, 4, 3]), np.array([0, 0, 1, 1, 2, 2]),
                                   np.array([0, 2, 1, 2, 0, 1])])
def test_scatter_rows_sum_each_elements_rows(index):
    """`Access.scatter_rows` gives each element the sum of its rows, in order or not, its order
    tested once per read (the second call reads the kept order); it takes rows already of the
    plate's shape as they are (no broadcast view): the same sums as rows broadcast from one row."""
    from ppl.infer.access import Access
    access = Access("z", index.reshape(6, 1), int(index.max()) + 1)
    rows = np.arange(18.0).reshape(6, 3)
    expected = np.zeros((access.size, 3))
    np.add.at(expected, index, rows)
    for _ in range(2):
        np.testing.assert_array_equal(access.scatter_rows(rows), expected)
    rng = np.random.default_rng(5)
    row = rng.normal(size=(1, 4))
    np.testing.assert_array_equal(access.scatter_rows(np.repeat(row, 6, axis=0)), access.scatter_rows(row))
    full = rng.normal(size=(6, 4))
    expected = np.zeros((access.size, 4))
    np.add.at(expected, index, full)
    np.testing.assert_allclose(access.scatter_rows(full), expected, rtol=1e-15)
