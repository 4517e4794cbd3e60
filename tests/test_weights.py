"""Row weights (`data count: weight[N]`): the weighted data give the expanded data's ELBO and
posterior (natural parameters) to 1e-10, for every kind of factor runtime they reach.

Each check runs the same sweeps on both problems from the same start: the weighted problem's
initial state, with every per-row variable repeated count[t] times for the expanded problem (the
expanded model's copies of a row share their q, and stay equal under the updates)."""

from __future__ import annotations

import numpy as np
import pytest

import ppl
from ppl.infer import build_problem
from ppl.infer.engine import _update
from ppl.infer.initialise import initialise

from model_texts import LDA, LOGISTIC, with_weight

TOL = 1e-10


def _problem(text, data):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def _expand(data: dict, count: np.ndarray) -> dict:
    return {k: np.repeat(np.asarray(v), count.astype(int), axis=0) for k, v in data.items()}


def _row_variables(problem, dim="N") -> list:
    return [n for n in problem.latent if n in problem.model.variables and dim in problem.model.variables[n].plates]


def check_equal_to_expanded(text, data, count, sweeps=6):
    """Runs `sweeps` sweeps on the weighted and on the expanded data; asserts equal ELBOs after
    every sweep and equal natural parameters at the end (per-row variables: row t against its
    first copy)."""
    weighted = _problem(with_weight(text), dict(data, count=count))
    expanded = _problem(text, _expand(data, count))
    rng = np.random.default_rng(1)
    state_w = initialise(weighted, rng)
    state_e = initialise(expanded, np.random.default_rng(2))
    reps = count.astype(int)
    for name in weighted.latent:
        natural = state_w.natural[name]
        state_e.set(name, np.repeat(natural, reps, axis=0) if name in _row_variables(weighted) else natural.copy())
    assert weighted.elbo(state_w) == pytest.approx(expanded.elbo(state_e), rel=TOL, abs=TOL)
    for sweep in range(1, sweeps + 1):
        for problem, state in ((weighted, state_w), (expanded, state_e)):
            for name in problem.order:
                _update(problem, state, name, problem.step(name, sweep))
        assert weighted.elbo(state_w) == pytest.approx(expanded.elbo(state_e), rel=TOL, abs=TOL)
    first = np.concatenate([[0], np.cumsum(reps)[:-1]])[reps > 0]
    for name in weighted.latent:
        mine, theirs = state_w.natural[name], state_e.natural[name]
        if name in _row_variables(weighted):
            mine = mine[reps > 0]
            theirs = theirs[first]
        np.testing.assert_allclose(mine, theirs, rtol=TOL, atol=TOL, err_msg=name)
    return weighted, state_w




def test_bag_of_words_lda_equals_one_row_per_token():
    rng = np.random.default_rng(0)
    doc, word = np.meshgrid(np.arange(1, 5), np.arange(1, 8), indexing="ij")
    count = rng.integers(0, 4, doc.size).astype(float)
    count[:4] = np.maximum(count[:4], 1)
    data = {"doc": doc.reshape(-1), "word": word.reshape(-1)}
    count[np.arange(4) * 7] += 1  # every document and word keeps a token
    count[:7] += 1
    check_equal_to_expanded(LDA, data, count)




def _design(rng, rows, dim):
    x = np.column_stack([np.ones(rows), rng.normal(size=(rows, dim - 1))])
    return {"X": x}, x


def test_count_weighted_logistic_regression_under_ncvmp_equals_expanded():
    rng = np.random.default_rng(3)
    columns, x = _design(rng, 12, 3)
    y = (rng.random(12) < 0.5).astype(float)
    count = rng.integers(0, 5, 12).astype(float)
    check_equal_to_expanded(LOGISTIC, dict(columns, y=y), count)


def test_the_logistic_rows_may_be_weighted_by_fractions():
    """A fractional weight is an importance weight: the ELBO term of each row scales linearly
    (doubling every weight equals stacking the data twice)."""
    rng = np.random.default_rng(4)
    columns, x = _design(rng, 10, 2)
    y = (rng.random(10) < 0.5).astype(float)
    half = rng.uniform(0.1, 2.0, 10)
    text = with_weight(LOGISTIC)
    double = ppl.compile(text).infer(dict(columns, y=y, count=2 * half), tol=1e-12, max_iter=200)
    stacked = ppl.compile(text).infer({"X": np.tile(x, (2, 1)), "y": np.tile(y, 2), "count": np.tile(half, 2)},
                                      tol=1e-12, max_iter=200)
    assert double.elbo == pytest.approx(stacked.elbo, rel=TOL)
    np.testing.assert_allclose(double["w"].natural, stacked["w"].natural, rtol=1e-9, atol=1e-9)


GMM = """
const K = 2
data x: real[N]
pi ~ Dirichlet(ones(K))
tau ~ Gamma(1, 1)
for k in 1..K { mu[k] ~ Normal(0, 0.1) }
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ Normal(mu[z[n]], tau)
}
"""


def test_count_weighted_gaussian_mixture_equals_expanded():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(-2, 1, 6), rng.normal(3, 1, 6)])
    count = rng.integers(0, 4, 12).astype(float)
    check_equal_to_expanded(GMM, {"x": x}, count)


HIERARCHICAL = """
data g: cat(G)[N]
data y: bool[N]
mu ~ Normal(0, 1)
tau ~ Gamma(1, 1)
for j in 1..G { b[j] ~ Normal(mu, tau) }
for n in 1..N { y[n] ~ Bernoulli(logistic(b[g[n]])) }
"""


def test_grouped_bernoulli_hierarchy_equals_expanded():
    """Rows (group, outcome, count): the binomial summary of Bernoulli trials per group."""
    g = np.repeat(np.arange(1, 5), 2)
    y = np.tile([1.0, 0.0], 4)
    count = np.array([3, 7, 0, 4, 5, 5, 9, 1], dtype=float)
    check_equal_to_expanded(HIERARCHICAL, {"g": g, "y": y}, count, sweeps=10)


POISSON = """
data X: real[N, D] from x1..xD
data y: int[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Poisson(exp(X @ w))
"""


def test_count_weighted_poisson_regression_equals_expanded():
    rng = np.random.default_rng(6)
    columns, x = _design(rng, 10, 2)
    y = rng.poisson(2.0, 10).astype(float)
    count = rng.integers(0, 4, 10).astype(float)
    check_equal_to_expanded(POISSON, dict(columns, y=y), count)


MISSING = """
data y: real[N]
mu ~ Normal(0, 0.01)
tau ~ Gamma(1, 1)
for n in 1..N { y[n] ~ Normal(mu, tau) }
"""


def test_a_partially_observed_column_equals_expanded():
    """A missing cell is a per-row latent: one q for its copies, its entropy counted per copy."""
    y = np.array([0.3, np.nan, 1.2, -0.4, np.nan, 2.0])
    count = np.array([2, 3, 1, 0, 2, 4], dtype=float)
    weighted, state = check_equal_to_expanded(MISSING, {"y": y}, count)
    assert "y" in weighted.latent


CATEGORY_MISSING = """
data c: cat(3)[N]
pi ~ Dirichlet(ones(3))
for n in 1..N { c[n] ~ Categorical(pi) }
"""


def test_a_partially_observed_category_equals_expanded():
    c = np.array([1.0, 2.0, np.nan, 3.0, np.nan, 1.0])
    count = np.array([2, 1, 3, 2, 1, 0], dtype=float)
    check_equal_to_expanded(CATEGORY_MISSING, {"c": c}, count)


def test_a_zero_weight_removes_the_row():
    rng = np.random.default_rng(7)
    x = rng.normal(size=8)
    text = with_weight(MISSING)
    count = np.array([1, 0, 2, 1, 0, 1, 3, 1], dtype=float)
    with_zero = ppl.compile(text).infer({"y": x, "count": count}, tol=1e-12)
    dropped = ppl.compile(text).infer({"y": x[count > 0], "count": count[count > 0]}, tol=1e-12)
    assert with_zero.elbo == pytest.approx(dropped.elbo, rel=TOL)


# ---- every runtime the weights reach: rules of the GLM factor, softmax, joint, Gamma CVI


@pytest.mark.parametrize("rule", ["@cvi(samples=0, kappa=0)", "@cvi(form=site, samples=0, step=0.5, kappa=0)",
                                  "@laplace", "@delta", "@jaakkola", "@bohning", "@piecewise"])
def test_every_deterministic_glm_rule_honours_weights(rule):
    rng = np.random.default_rng(8)
    columns, x = _design(rng, 9, 3)
    y = (rng.random(9) < 0.5).astype(float)
    count = rng.integers(0, 4, 9).astype(float)
    check_equal_to_expanded(LOGISTIC.replace("(X @ w))", f"(X @ w)) {rule}"), dict(columns, y=y), count, sweeps=4)


def test_a_wide_design_solved_by_woodbury_honours_weights():
    """D > N: the weighted rows are few enough for the low-rank (Woodbury) solve of w."""
    rng = np.random.default_rng(9)
    columns, x = _design(rng, 5, 8)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    count = np.array([1, 3, 2, 0, 2], dtype=float)
    check_equal_to_expanded(LOGISTIC, dict(columns, y=y), count)


SOFTMAX = """
const K = 3
data x: real[N, D] from x1..xD
data y: cat(K)[N]
for k in 1..K { w[k] ~ MvNormal(zeros(D), eye(D)) }
for n in 1..N { y[n] ~ Categorical(softmax(w @ x[n])) @stick }
"""


def test_a_softmax_likelihood_honours_weights():
    rng = np.random.default_rng(10)
    x = np.column_stack([np.ones(9), rng.normal(size=9)])
    y = np.tile([1, 2, 3], 3)
    count = rng.integers(0, 4, 9).astype(float)
    count[:3] += 1
    check_equal_to_expanded(SOFTMAX, {"x": x, "y": y}, count, sweeps=4)


CTM = """
const K = 2
data doc: cat(D)[N]
data word: cat(V)[N]
mu ~ MvNormal(zeros(K), eye(K))
for d in 1..D { eta[d] ~ MvNormal(mu, eye(K)) }
for k in 1..K { beta[k] ~ Dirichlet(0.5 * ones(V)) }
for t in 1..N {
  z[t] ~ Categorical(softmax(eta[doc[t]]))
  word[t] ~ Categorical(beta[z[t]])
}
"""


def test_a_softmax_of_a_vector_per_group_honours_weights():
    rng = np.random.default_rng(11)
    doc, word = np.meshgrid(np.arange(1, 4), np.arange(1, 6), indexing="ij")
    count = rng.integers(1, 4, doc.size).astype(float)
    check_equal_to_expanded(CTM, {"doc": doc.reshape(-1), "word": word.reshape(-1)}, count, sweeps=4)


JOINT = """
const K = 2
data x: real[N, D] from (a, b)
pi ~ Dirichlet(ones(K))
for k in 1..K {
  Lambda[k] ~ Wishart(3.0, eye(D))
  mu[k] ~ MvNormal(zeros(D), 0.5 * Lambda[k]) @joint
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])
}
"""


def test_a_joint_normal_wishart_mixture_honours_weights():
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.normal(-2, 1, (5, 2)), rng.normal(2, 1, (5, 2))])
    count = rng.integers(0, 4, 10).astype(float)
    check_equal_to_expanded(JOINT, {"x": x}, count)


GAMMA_SHAPE = """
data y: real[N]
s ~ Gamma(2.0, 1.0)
for n in 1..N { y[n] ~ Gamma(s, 1.0) @cvi(samples=0, kappa=0) }
"""


def test_gamma_cvi_by_quadrature_honours_weights():
    y = np.array([0.5, 1.7, 2.2, 0.9, 3.1])
    count = np.array([2, 0, 1, 3, 1], dtype=float)
    check_equal_to_expanded(GAMMA_SHAPE, {"y": y}, count)


POISSON_MF = """
const K = 2
data user: cat(U)[N]
data item: cat(I)[N]
data y: int[N]
for u in 1..U { for k in 1..K { theta[u, k] ~ Gamma(0.3, 0.3) } }
for i in 1..I { for k in 1..K { beta[i, k] ~ Gamma(0.3, 0.3) } }
for r in 1..N { y[r] ~ Poisson(dot(theta[user[r]], beta[item[r]])) @cvi(step=0.5, kappa=0) }
"""


def test_poisson_rate_cvi_honours_weights_with_the_same_draws():
    """A Monte Carlo rule, but its draws are per element of theta and beta, not per row: from the
    same seed the weighted and expanded runs use the same draws and agree to round-off."""
    user, item = np.meshgrid(np.arange(1, 4), np.arange(1, 4), indexing="ij")
    y = np.array([1, 5, 0, 2, 3, 7, 4, 0, 1], dtype=float)
    count = np.array([1, 2, 3, 1, 2, 1, 2, 3, 1], dtype=float)
    data = {"user": user.reshape(-1), "item": item.reshape(-1), "y": y}
    weighted = _problem(with_weight(POISSON_MF), dict(data, count=count))
    expanded = _problem(POISSON_MF, _expand(data, count))
    states = [initialise(p, np.random.default_rng(3)) for p in (weighted, expanded)]
    for state in states:
        state.rng = np.random.default_rng(4)
    for sweep in range(1, 4):
        for problem, state in zip((weighted, expanded), states):
            for name in problem.order:
                _update(problem, state, name, problem.step(name, sweep))
    assert weighted.elbo(states[0]) == pytest.approx(expanded.elbo(states[1]), rel=1e-9)
    for name in ("theta", "beta"):
        np.testing.assert_allclose(states[0].natural[name], states[1].natural[name], rtol=1e-9)


def test_a_minibatch_estimate_weights_its_rows():
    """`@cvi(minibatch=B)`: the ELBO estimate is N/B times the count-weighted sum on the batch."""
    rng = np.random.default_rng(13)
    columns, x = _design(rng, 8, 2)
    y = (rng.random(8) < 0.5).astype(float)
    count = np.array([1, 0, 2, 3, 1, 2, 0, 4], dtype=float)
    problem = _problem(with_weight(LOGISTIC.replace("(X @ w))", "(X @ w)) @cvi(minibatch=4)")),
                       dict(columns, y=y, count=count))
    state = initialise(problem, np.random.default_rng(0))
    factor = next(f for f in problem.factors if f.name == "y")
    state.rng = np.random.default_rng(5)
    rows, scale = factor._draw_batch(np.random.default_rng(5))
    value, _ = factor.elbo_estimate(state)
    _, _, m, v = factor._rows(state, slice(None))
    terms = factor.approximation(factor.likelihood, factor.y, factor.n, m, v)[0].reshape(-1)
    assert value == pytest.approx(scale * np.sum(count[rows] * terms[rows]), rel=TOL)


def test_a_weighted_mixture_fits_like_its_expansion_end_to_end():
    """Through `Model.infer`: k-means seeding weighs the points by their counts, and the weighted
    and the expanded fit reach the same fixed point of three separated clusters."""
    rng = np.random.default_rng(14)
    x = np.concatenate([rng.normal(m, 0.3, 5) for m in (-6.0, 0.0, 6.0)])
    count = rng.integers(1, 5, 15).astype(float)
    text = GMM.replace("const K = 2", "const K = 3")
    fits = [ppl.compile(t).infer(d, seed=0, tol=1e-13, mean_tol=1e-12, max_iter=3000)
            for t, d in ((with_weight(text), {"x": x, "count": count}), (text, _expand({"x": x}, count)))]
    assert fits[0].elbo == pytest.approx(fits[1].elbo, rel=1e-9)
    order = [np.argsort(f["mu"].mean) for f in fits]
    np.testing.assert_allclose(fits[0]["mu"].mean[order[0]], fits[1]["mu"].mean[order[1]], rtol=1e-7)
