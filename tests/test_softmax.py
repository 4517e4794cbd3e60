"""Categorical(softmax(η)) likelihoods against independent computations.

Under q(W) = Π_k q(w_k) the margins η_nk = x_n·w_k are independent Gaussians, and every rule is
(y, m, v) → (term, g1 = ∂term/∂m, g2 = 2 ∂term/∂v) per (n, k): `expected` (cvi with samples=0,
ncvmp), `delta`, `bohning` (multinomial Böhning with A = ½[I − 11ᵀ/K]).
"""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp, softmax

import ppl
from ppl.infer import likelihoods, links, softmax as rules

from gaussian_optimum import assert_at_optimum, factorised_elbo_optimum
from model_texts import IRIS_SOFTMAX as SMALL

ROOT = Path(__file__).resolve().parents[1]
MODEL, DATA = ROOT / "models" / "multinomial_logistic.vim", ROOT / "models" / "multinomial_logistic.csv"
LOGISTIC = links.LIKELIHOODS[("Bernoulli", "logistic")]


def margins(rng, rows, k, spread=2.0, widest=1.0):
    return rng.normal(0, spread, (rows, k)), rng.uniform(0.01, widest, (rows, k)), rng.integers(0, k, rows)


# ---- K = 2 with class 2 fixed at η_2 = 0 is logistic regression ---------------------------------

@pytest.mark.parametrize("multi, binary, tol", [
    (rules.expected, likelihoods.quadrature, 1e-9),  # 48² Gauss–Hermite against 48-node GH
    (rules.delta, likelihoods.delta, 1e-12),
    (rules.bohning, likelihoods.bohning, 1e-12),  # A = ½[I − 11ᵀ/2] = ¼[[1, −1], [−1, 1]]: A_11 = ¼
])
def test_two_classes_with_one_fixed_at_zero_is_the_binary_rule(multi, binary, tol):
    rng = np.random.default_rng(0)
    m1, v1, y = margins(rng, 200, 1)
    m = np.concatenate([m1, np.zeros_like(m1)], -1)
    v = np.concatenate([v1, np.zeros_like(v1)], -1)
    term, g1, g2 = multi(y, m, v)
    b_term, b_g1, b_g2 = binary(LOGISTIC, (y == 0).astype(float), 1.0, m1[:, 0], v1[:, 0])
    np.testing.assert_allclose(term, b_term, rtol=0, atol=tol)
    np.testing.assert_allclose(g1[:, 0], b_g1, rtol=0, atol=tol)
    np.testing.assert_allclose(g2[:, 0], b_g2, rtol=0, atol=tol)


def test_bohning_curvature_for_two_classes_is_the_binary_quarter():
    assert rules.bohning_curvature(2) == 0.25
    assert rules.bohning_curvature(3) == pytest.approx(1 / 3)


# ---- derivatives -----------------------------------------------------------------------------

def finite_differences(rule, y, m, v, h=1e-6):
    """(∂term/∂m, 2 ∂term/∂v) by central differences, column by column."""
    d_m, d_v = np.zeros_like(m), np.zeros_like(v)
    for k in range(m.shape[-1]):
        step = np.zeros_like(m)
        step[:, k] = h
        d_m[:, k] = (rule(y, m + step, v)[0] - rule(y, m - step, v)[0]) / (2 * h)
        d_v[:, k] = (rule(y, m, v + step)[0] - rule(y, m, v - step)[0]) / h
    return d_m, d_v


@pytest.mark.parametrize("rule", [rules.delta, rules.bohning, rules.expected])
@pytest.mark.parametrize("k", [2, 3])
def test_g1_g2_are_the_derivatives_of_the_term(rule, k):
    rng = np.random.default_rng(k)
    m, v, y = margins(rng, 50, k)
    _, g1, g2 = rule(y, m, v)
    d_m, d_v = finite_differences(rule, y, m, v)
    np.testing.assert_allclose(g1, d_m, rtol=0, atol=1e-7)
    # the quadrature's g2 is Price's E[∂²log f], equal to 2∂/∂v of the exact integral
    np.testing.assert_allclose(g2, d_v, rtol=0, atol=1e-7 if rule is not rules.expected else 1e-6)


def test_the_deterministic_estimate_matches_brute_force_monte_carlo():
    rng = np.random.default_rng(7)
    m, v, y = margins(rng, 6, 3, widest=3.0)
    eta = m[:, None, :] + np.sqrt(v)[:, None, :] * rng.standard_normal((6, 400_000, 3))
    term, g1, g2 = rules.expected(y, m, v)
    mc = m[np.arange(6), y] - logsumexp(eta, axis=-1).mean(1)
    p = softmax(eta, axis=-1)
    np.testing.assert_allclose(term, mc, rtol=0, atol=5e-3)
    np.testing.assert_allclose(g1, rules.onehot(y, 3) - p.mean(1), rtol=0, atol=5e-3)
    np.testing.assert_allclose(g2, -(p * (1 - p)).mean(1), rtol=0, atol=5e-3)


def test_cvi_draws_are_unbiased_for_the_deterministic_gradients():
    rng = np.random.default_rng(3)
    m, v, y = margins(rng, 20, 3)
    g1, g2 = rules.monte_carlo(y, m, v, np.random.default_rng(0), 100_000)
    _, e1, e2 = rules.expected(y, m, v)
    np.testing.assert_allclose(g1, e1, rtol=0, atol=5e-3)
    np.testing.assert_allclose(g2, e2, rtol=0, atol=5e-3)



def test_cvi_draws_in_antithetic_pairs_err_by_order_v():
    """softmax(m ± √v ε) over a pair cancels the odd part: at v = 1e-4, 16 draws (8 pairs) give g1
    and g2 within v of the product quadrature's (0.15 v measured), where 16 independent draws err
    by about 0.25 √(v/16), 2.5e-3 here."""
    rng = np.random.default_rng(5)
    m, y = rng.normal(size=(200, 3)) * 2, rng.integers(0, 3, 200)
    v = np.full(m.shape, 1e-4)
    g1, g2 = rules.monte_carlo(y, m, v, np.random.default_rng(1), 16)
    _, e1, e2 = rules.expected(y, m, v)
    assert np.max(np.abs(g1 - e1)) <= 1e-4 and np.max(np.abs(g2 - e2)) <= 1e-4

# ---- Böhning is a bound ------------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 5])
def test_bohning_curvature_dominates_the_hessian_of_lse(k):
    """A = ½[I − 11ᵀ/K] ⪰ diag(p) − ppᵀ for every p on the simplex (Böhning 1992)."""
    rng = np.random.default_rng(k)
    a = 0.5 * (np.eye(k) - np.ones((k, k)) / k)
    for p in rng.dirichlet(np.full(k, 0.3), 2000):
        assert np.linalg.eigvalsh(a - (np.diag(p) - np.outer(p, p))).min() > -1e-12


@pytest.mark.parametrize("k", [3, 5])
def test_bohning_is_below_the_expectation(k):
    rng = np.random.default_rng(11)
    m, v, y = margins(rng, 40, k, widest=4.0)
    bound = rules.bohning(y, m, v)[0]
    eta = m[:, None, :] + np.sqrt(v)[:, None, :] * rng.standard_normal((40, 50_000, k))
    draws = m[np.arange(40), y][:, None] - logsumexp(eta, axis=-1)
    exact = draws.mean(1)
    assert np.all(bound < exact + 4 * draws.std(1) / np.sqrt(draws.shape[1]))
    if k == 3:
        assert np.all(bound < rules.expected(y, m, v)[0])


# ---- Böhning with a reference category (thesis §5.4: A = ½[I − 11ᵀ/K] over the K − 1 free logits) ------

def reference_curvature(k):
    return 0.5 * (np.eye(k - 1) - np.ones((k - 1, k - 1)) / k)


def to_reference(k):
    """P with η̃ = P η = (η_j − η_K)_{j<K}: the logits against class K."""
    return np.hstack([np.eye(k - 1), -np.ones((k - 1, 1))])


@pytest.mark.parametrize("k", [2, 3, 6])
def test_reference_curvature_is_positive_definite_and_bounds_the_hessian(k):
    a = reference_curvature(k)
    assert np.linalg.eigvalsh(a).min() == pytest.approx(1 / (2 * k))  # PD: no 1-direction to lose
    for p in np.random.default_rng(k).dirichlet(np.full(k, 0.3), 2000):
        q = p[:-1]  # the Hessian of lse1(η̃) = log(1 + Σ e^{η̃_j}) is diag(q) − qqᵀ
        assert np.linalg.eigvalsh(a - (np.diag(q) - np.outer(q, q))).min() > -1e-12


@pytest.mark.parametrize("k", [2, 3, 6])
def test_k_class_curvature_is_the_reference_form_in_k_coordinates(k):
    """Pᵀ A_ref P = ½[I − 11ᵀ/K]: the bound on lse(η) = η_K + lse1(P η) with the reference form's A
    is the K-class bound, for any q; the K-class A is singular only along 1, where lse is linear."""
    np.testing.assert_allclose(to_reference(k).T @ reference_curvature(k) @ to_reference(k),
                               0.5 * (np.eye(k) - np.ones((k, k)) / k), rtol=0, atol=1e-15)


def reference_bohning(y, k):
    """The reference-form Böhning bound at ψ̃ = m̃, written for factorised q over the K classes:
    m̃ = P m, Cov(η̃) = diag(v_{<K}) + v_K 11ᵀ, term = m̃_y − lse1(m̃) − ½ tr(A_ref Cov(η̃)), with its
    derivatives in (m, 2·v) through m̃ = P m."""
    a, proj, onehot = reference_curvature(k), to_reference(k), np.eye(k)[y][:, :-1]

    def terms(m, v):
        free = m @ proj.T
        lse1 = np.logaddexp(0.0, logsumexp(free, axis=-1))
        spread = np.einsum("jj,nj->n", a, v[:, :-1]) + a.sum() * v[:, -1]
        slope = onehot - np.exp(free - lse1[:, None])
        g2 = -np.concatenate([np.broadcast_to(np.diag(a), v[:, :-1].shape), np.full((len(v), 1), a.sum())], 1)
        return np.sum(onehot * free, -1) - lse1 - 0.5 * spread, slope @ proj, g2

    return terms


def test_reference_form_reduces_to_the_binary_bohning_rule():
    """K = 2: A_ref = ¼, η̃ = η_1 − η_2, the binary rule on the margin N(m_1 − m_2, v_1 + v_2)."""
    rng = np.random.default_rng(5)
    m, v, y = margins(rng, 100, 2)
    term, g1, g2 = reference_bohning(y, 2)(m, v)
    b_term, b_g1, b_g2 = likelihoods.bohning(LOGISTIC, (y == 0).astype(float), 1.0, m[:, 0] - m[:, 1], v.sum(1))
    np.testing.assert_allclose(term, b_term, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g1, np.stack([b_g1, -b_g1], 1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(g2, np.stack([b_g2, b_g2], 1), rtol=0, atol=1e-12)


# ---- fixed points: the optimum of each rule's objective over factorised Gaussian q ---------------

GH_X, GH_W = np.polynomial.hermite.hermgauss(16)


def reference_terms(rule, y, k):
    """Each rule's objective and its (m, 2·v) derivatives, written here independently of ppl."""
    onehot = np.eye(k)[y]
    a = 0.5 * (1 - 1 / k)
    x = np.stack(np.meshgrid(*[GH_X * np.sqrt(2)] * k, indexing="ij"), -1).reshape(-1, k)
    w = np.prod(np.stack(np.meshgrid(*[GH_W / np.sqrt(np.pi)] * k, indexing="ij"), -1).reshape(-1, k), -1)

    def quadrature(m, v):  # E[lse] by a 16^K product rule; ∂/∂v from the nodes' dependence on √v
        s = np.sqrt(v)
        eta = m[:, None, :] + s[:, None, :] * x
        lse = logsumexp(eta, axis=-1)
        p = softmax(eta, axis=-1)
        return (np.sum(onehot * m, -1) - lse @ w, onehot - np.einsum("s,nsk->nk", w, p),
                -np.einsum("s,nsk->nk", w, p * x) / s)

    def delta(m, v):
        p = softmax(m, axis=-1)
        c = v * p * (1 - 2 * p)  # ∂[p_k(1 − p_k)]/∂m_j = (1 − 2p_k) p_k (δ_kj − p_j)
        return (np.sum(onehot * m, -1) - logsumexp(m, axis=-1) - 0.5 * np.sum(p * (1 - p) * v, -1),
                onehot - p - 0.5 * (c - p * c.sum(-1, keepdims=True)), -p * (1 - p))

    def bohning(m, v):
        return (np.sum(onehot * m, -1) - logsumexp(m, axis=-1) - 0.5 * a * v.sum(-1),
                onehot - softmax(m, axis=-1), np.full_like(v, -a))

    return {"ncvmp": quadrature, "delta": delta, "bohning": bohning}[rule]


@pytest.fixture(scope="module")
def iris():
    table = pd.read_csv(DATA)
    x = table[["intercept", "sepal_length", "sepal_width", "petal_length", "petal_width"]].to_numpy()
    y = pd.Categorical(table["species"]).codes.astype(int)
    return table, x, y


@pytest.mark.parametrize("rule", ["ncvmp", "delta", "bohning", "reference"])
def test_fixed_point_is_the_optimum_of_the_objective(iris, rule):
    """`reference`: bound:bohning's fixed point is the optimum of the reference-form bound."""
    table, x, y = iris
    rows = np.r_[0:12, 50:62, 100:112]  # 12 flowers per class, three columns: moderate margins
    data = table.iloc[rows][["intercept", "sepal_length", "sepal_width", "species"]]
    objective = reference_bohning(y[rows], 3) if rule == "reference" else reference_terms(rule, y[rows], 3)
    best, means, covs = factorised_elbo_optimum(x[rows, :3], 3, objective)
    rule = "bohning" if rule == "reference" else rule
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ncvmp and delta may halve their step on the way
        post = ppl.compile(SMALL).infer(data, methods={"y": rule}, seed=0, tol=1e-15, max_iter=3000)
    assert_at_optimum(post, best, means, covs, elbo_abs=1e-6, atol=1e-4)


def test_cvi_without_samples_is_the_deterministic_rule(iris):
    table, _, _ = iris
    data = table.iloc[np.r_[0:12, 50:62, 100:112]][["intercept", "sepal_length", "sepal_width", "species"]]
    model = ppl.compile(SMALL.replace("w @ x[n]))", "w @ x[n])) @cvi(samples=0, step=1, kappa=0)"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cvi = model.infer(data, seed=0, tol=1e-15, max_iter=3000)
        ncvmp = ppl.compile(SMALL).infer(data, methods={"y": "ncvmp"}, seed=0, tol=1e-15, max_iter=3000)
    assert cvi.elbo == pytest.approx(ncvmp.elbo, abs=1e-6)


# ---- iris end to end ---------------------------------------------------------------------------

def accuracy(x, y, means):
    return float(np.mean(np.argmax(x @ means.T, axis=1) == y))


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("softmax") / "post.json"
    result = subprocess.run([sys.executable, "-m", "ppl.cli", "infer", str(MODEL), str(DATA), "--seed", "0",
                             "--output", str(out)], capture_output=True, text=True, cwd=ROOT)
    return result, out


def test_iris_runs_from_the_command_line_and_classifies(iris, default_run):
    result, out = default_run
    assert result.returncode == 0, result.stderr
    assert "rules: ncvmp, vmp" in result.stdout
    document = json.loads(out.read_text())
    means = np.asarray(document["variables"]["w"]["mean"])
    _, x, y = iris
    assert means.shape == (3, 5)
    assert accuracy(x, y, means) > 0.95


@pytest.mark.parametrize("rule", ["bohning", "delta"])
def test_iris_accuracy_per_rule(iris, rule):
    _, x, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ppl.load(MODEL).infer(str(DATA), methods={"y": rule}, seed=0)
    m, _ = post["w"].family.mean_cov(post["w"].natural)
    assert post.converged
    assert accuracy(x, y, m) > 0.95


def test_bohning_on_iris_is_monotone_and_below_the_elbo_of_its_own_q(iris, default_run):
    _, x, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ELBO decrease under a monotone rule warns
        post = ppl.load(MODEL).infer(str(DATA), methods={"y": "bohning"}, seed=0, tol=1e-12, max_iter=2000)
    trace = np.asarray(post.trace)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    mean, cov = post["w"].family.mean_cov(post["w"].natural)
    m = x @ mean.T
    v = np.einsum("nd,kde,ne->nk", x, cov, x)
    bound, exact = rules.bohning(y, m, v)[0].sum(), rules.expected(y, m, v)[0].sum()
    # same q, same prior and entropy: the ELBO of q is the bound plus the gap of the likelihood terms
    assert bound < exact - 1.0
    assert post.elbo < post.elbo - bound + exact
    result, _ = default_run
    default_elbo = float(result.stdout.split("ELBO ")[1].split()[0])  # ncvmp's, the default
    assert post.elbo < default_elbo


@pytest.mark.parametrize("rule", ["ncvmp", "cvi"])
def test_a_row_of_zero_covariates_is_an_exact_margin_not_an_internal_error(rule):
    """Its logits are 0 on every class with no variance: the row adds log(1/K) to the ELBO."""
    table = pd.DataFrame({"intercept": [1.0, 1.0, 0.0, 1.0, 1.0], "sepal_length": [0.3, -1.2, 0.0, 0.8, 0.1],
                          "sepal_width": [-0.5, 0.4, 0.0, 1.1, -0.9], "species": ["a", "b", "a", "a", "c"]})
    model = ppl.compile(SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = model.infer(table, seed=0, methods={"y": rule})
        rest = model.infer(table.drop(index=2), seed=0, methods={"y": rule}, tol=1e-10)
    assert np.isfinite(post.elbo)
    if rule == "ncvmp":  # the zero row's site has zero weight: the rest of the fit is unchanged
        post = model.infer(table, seed=0, methods={"y": rule}, tol=1e-10)
        assert post.elbo - rest.elbo == pytest.approx(np.log(1 / 3), abs=1e-6)


def test_wide_margins_update_every_class():
    """Covariates of sd 30 make the prior's margins wide (sd up to about 75): each class's sites
    must stay finite, so every class's weights move off the prior on the first sweep (the sites of
    two classes were NaN once, and the run stopped at sweep 2 with those classes at the prior)."""
    rng = np.random.default_rng(0)
    b = rng.normal(size=60)
    table = pd.DataFrame({"intercept": 1.0, "sepal_length": 30 * b, "sepal_width": 0.0,
                          "species": np.where(b > 0.5, "p", np.where(b < -0.5, "r", "q"))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ppl.compile(SMALL).infer(table, seed=0, max_iter=5)
    assert np.isfinite(post.trace).all() and post.iterations == 5
    assert np.all(np.abs(np.asarray(post["w"].mean)[:, :2]).max(axis=1) > 1e-3)


def test_a_nan_site_is_a_located_breakdown_not_a_silent_fixed_point(monkeypatch):
    """A damped Gaussian whose messages hold NaN used to keep its λ after every halving of the
    step, so the run looked converged; now it is E502 at the variable, naming the factor."""
    real = rules.expected

    def broken(y, m, v):
        term, g1, g2 = real(y, m, v)
        g2 = g2.copy()
        g2[..., 1] = np.nan
        return term, g1, g2
    monkeypatch.setattr(rules, "expected", broken)
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(SMALL).infer(str(DATA), seed=0, max_iter=3)
    assert error.value.code == "E502" and "q(w)" in error.value.message and "NaN" in error.value.message
    assert error.value.span.source.line(error.value.span.line).lstrip().startswith("w[k]")
