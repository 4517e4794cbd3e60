"""`y ~ OrderedLogistic(η, cut)` (cumulative logit, P(y ≤ k) = σ(φ_k − η)) against independent
computations: the probabilities it defines, its derivatives, the thesis's corrected eq. 6.4, the
L-BFGS optimum of the Gaussian ELBO, and Bernoulli-logistic when K = 2."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit

import ppl
from ppl.diagnostics import PplError
from ppl.infer import likelihoods, links
from ppl.infer.piecewise import table

from gaussian_optimum import assert_at_optimum, gaussian_elbo_optimum, gh_expect

MODELS = Path(__file__).resolve().parents[1] / "models"
ORDINAL = links.ordered_logistic()
LOGISTIC = links.LIKELIHOODS[("Bernoulli", "logistic")]
CUT = np.array([-2.0, -0.7, 0.7, 2.0])


def around(cut, k):
    """(φ_{k−1}, φ_k) for 1-based categories k, infinite at the ends."""
    edges = np.concatenate([[-np.inf], cut, [np.inf]])
    return edges[k - 1], edges[k]


def llp(x):
    return np.logaddexp(0.0, x)


# ---- the likelihood ------------------------------------------------------------------------

def test_probabilities_sum_to_one_and_are_differences_of_the_cumulative_logits():
    eta = np.random.default_rng(0).normal(0, 3, 500)
    probs = np.stack([np.exp(ORDINAL.log_f(*around(CUT, k), eta)) for k in range(1, 6)])
    np.testing.assert_allclose(probs.sum(0), 1.0, rtol=0, atol=1e-12)
    cumulative = np.concatenate([np.zeros((1, 500)), expit(CUT[:, None] - eta), np.ones((1, 500))])
    np.testing.assert_allclose(probs, np.diff(cumulative, axis=0), rtol=0, atol=1e-12)


def test_interior_categories_follow_the_corrected_eq_6_4():
    """log P(y = k) = η − llp(η − φ_k) − llp(η − φ_{k−1}) + log(e^{−φ_{k−1}} − e^{−φ_k}); the printed
    −log(e^{φ_{k−1}} − e^{φ_k}) takes the log of a negative number."""
    eta = np.linspace(-6, 6, 101)
    for k in (2, 3, 4):
        lo, hi = around(CUT, k)
        corrected = eta - llp(eta - hi) - llp(eta - lo) + np.log(np.exp(-lo) - np.exp(-hi))
        np.testing.assert_allclose(ORDINAL.log_f(lo, hi, eta), corrected, rtol=0, atol=1e-12)
        assert np.exp(lo) - np.exp(hi) < 0  # the printed argument


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_derivatives_are_finite_differences(k):
    lo, hi = around(CUT, k)
    eta, h = np.linspace(-7, 7, 57), 1e-5
    for lower, upper in ((ORDINAL.log_f, ORDINAL.d1), (ORDINAL.d1, ORDINAL.d2), (ORDINAL.d2, ORDINAL.d3)):
        numeric = (lower(lo, hi, eta + h) - lower(lo, hi, eta - h)) / (2 * h)
        np.testing.assert_allclose(upper(lo, hi, eta), numeric, rtol=0, atol=1e-8)
    assert np.all(ORDINAL.d2(lo, hi, eta) < 0)  # log-concave: every site has a positive precision


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_one_pass_values_are_the_separate_functions_in_both_tails(k):
    """`values` (log f, d1, d2 from one exponential per cutpoint) against log_f, d1, d2 by scipy's
    expit and log_expit over η in [−40, 40], infinite end cutpoints included: each within 1e-14 of
    the size of its parts (d1 = σ(lo − η) − σ(η − hi) cancels where the two are close)."""
    lo, hi = around(CUT, k)
    eta = np.linspace(-40, 40, 4001)
    fused = ORDINAL.values(np.full((eta.size, 1), lo), np.full((eta.size, 1), hi), eta[:, None].copy())
    scales = (np.abs(ORDINAL.log_f(lo, hi, eta)), expit(lo - eta) + expit(eta - hi), np.abs(ORDINAL.d2(lo, hi, eta)))
    for one_pass, separate, scale in zip(fused, (ORDINAL.log_f, ORDINAL.d1, ORDINAL.d2), scales):
        assert np.all(np.abs(one_pass[:, 0] - separate(lo, hi, eta)) <= 1e-14 * scale)


# ---- K = 2 is Bernoulli-logistic at φ_1 − η ------------------------------------------------

RULES = {
    "ncvmp": likelihoods.quadrature,
    "laplace": likelihoods.laplace,
    "delta": likelihoods.delta,
    "piecewise": likelihoods.piecewise(table("quadratic", 10)),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_two_categories_are_bernoulli_logistic_of_the_cutpoint_minus_eta(rule):
    """P(y = 1) = σ(φ − η): category 1 is a Bernoulli success at η' = φ − η, category 2 a failure;
    the margin of η' is N(φ − m, v), so the term agrees and g1 changes sign."""
    rng = np.random.default_rng(1)
    m, v, phi = rng.normal(0, 2, 300), rng.uniform(0.01, 3.0, 300), 0.4
    first = rng.random(300) < 0.5
    lo, hi = np.where(first, -np.inf, phi), np.where(first, phi, np.inf)
    term, g1, g2 = RULES[rule](ORDINAL, lo, hi, m, v)
    b_term, b_g1, b_g2 = RULES[rule](LOGISTIC, first.astype(float), 1.0, phi - m, v)
    np.testing.assert_allclose(term, b_term, rtol=0, atol=1e-10)
    np.testing.assert_allclose(g1, -b_g1, rtol=0, atol=1e-10)
    np.testing.assert_allclose(g2, b_g2, rtol=0, atol=1e-10)


def test_two_category_model_is_the_bernoulli_model():
    table_ = pd.read_csv(MODELS / "ordinal_regression.csv").iloc[:80]
    data = table_.assign(rating=np.where(table_["rating"] <= 2, 1, 2), success=(table_["rating"] <= 2).astype(int))
    ordinal = ppl.compile("""
data x: real[N, D] from x1..x3
data rating: int[N]
w ~ MvNormal(zeros(D), eye(D))
for n in 1..N {
  rating[n] ~ OrderedLogistic(dot(x[n], w), [-0.7])
}""").infer(data, seed=0, tol=1e-12)
    bernoulli = ppl.compile("""
data x: real[N, D] from x1..x3
data success: bool[N]
w ~ MvNormal(zeros(D), eye(D))
for n in 1..N {
  success[n] ~ Bernoulli(logistic(-0.7 - dot(x[n], w)))
}""").infer(data, seed=0, tol=1e-12)
    assert ordinal.elbo == pytest.approx(bernoulli.elbo, abs=1e-9)
    for a, b in zip(ordinal["w"].family.mean_cov(ordinal["w"].natural),
                    bernoulli["w"].family.mean_cov(bernoulli["w"].natural)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


# ---- fixed points ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ratings():
    frame = pd.read_csv(MODELS / "ordinal_regression.csv").iloc[:100]
    return frame, frame[["x1", "x2", "x3"]].to_numpy(), frame["rating"].to_numpy()


def test_ncvmp_fixed_point_is_the_gaussian_elbo_optimum(ratings):
    """E[log P(y)] written here from the probabilities themselves, its m-gradient from
    P'(η)/P(η), and 2∂/∂v from the Gauss–Hermite nodes' dependence on √v."""
    frame, x, y = ratings
    lo, hi = around(CUT, y)

    def log_prob(eta):  # log of σ(hi − η) − σ(lo − η) = σ(η − lo) − σ(η − hi), from the side of the
        a, b = hi[:, None] - eta, eta - lo[:, None]  # nearer cutpoint, where both terms are small
        with np.errstate(invalid="ignore", divide="ignore"):  # in the branch not taken
            above = log_expit(a) + np.log1p(-np.exp(log_expit(-b) - log_expit(a)))
            below = log_expit(b) + np.log1p(-np.exp(log_expit(-a) - log_expit(b)))
        return np.where(a < b, above, below)

    def log_density(u):  # log σ'(u)
        return log_expit(u) + log_expit(-u)

    def slope(eta):  # d/dη log P = [σ'(lo − η) − σ'(hi − η)] / P
        lp = log_prob(eta)
        return np.exp(log_density(lo[:, None] - eta) - lp) - np.exp(log_density(hi[:, None] - eta) - lp)

    def terms(m, v):  # 2∂/∂v E[f(m + √v ε)] = E[f'(η) ε] / √v = E[f'(η)(η − m)] / v
        g2 = gh_expect(lambda eta: slope(eta) * (eta - m[:, None]), m, v) / v
        return gh_expect(log_prob, m, v), gh_expect(slope, m, v), g2

    best, mean, cov = gaussian_elbo_optimum(x, terms)
    post = ppl.load(MODELS / "ordinal_regression.vim").infer(frame, seed=0, tol=1e-14, max_iter=2000)
    assert_at_optimum(post, best, mean, cov, elbo_abs=1e-7, atol=1e-5)


def test_piecewise_is_a_bound_within_its_table_error_per_llp_term(ratings):
    frame, x, y = ratings
    text = (MODELS / "ordinal_regression.vim").read_text().replace("cut)", "cut) @piecewise(pieces=10)")
    post = ppl.compile(text).infer(frame, seed=0, tol=1e-12)
    exact = ppl.load(MODELS / "ordinal_regression.vim").infer(frame, seed=0, tol=1e-12)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    lo, hi = around(CUT, y)
    own = likelihoods.quadrature(ORDINAL, lo, hi, x @ m, np.einsum("ij,jk,ik->i", x, v, x))[0].sum()
    own -= 0.5 * (np.trace(v) + m @ m - len(m) - np.linalg.slogdet(v)[1])
    terms = np.isfinite(lo).sum() + np.isfinite(hi).sum()  # one llp term per finite cutpoint
    slack = terms * table("quadratic", 10).max_error
    assert post.elbo < own <= post.elbo + slack
    assert post.elbo < exact.elbo <= post.elbo + slack


@pytest.mark.parametrize("rule", ["cvi", "laplace", "delta"])
def test_every_scalar_rule_recovers_the_weights(ratings, rule):
    post = ppl.load(MODELS / "ordinal_regression.vim").infer(MODELS / "ordinal_regression.csv",
                                                             methods={"rating": rule}, seed=0)
    m, _ = post["w"].family.mean_cov(post["w"].natural)
    np.testing.assert_allclose(m, [1.0, -0.7, 0.4], atol=0.15)


# ---- mistakes ---------------------------------------------------------------------------------

HEAD = "data x: real[N]\ndata y: int[N]\nw ~ Normal(0, 1)\n"
CSV = "x,y\n0.5,1\n-1.0,3\n0.2,2\n"


@pytest.mark.parametrize("line, code, where", [
    ("y ~ OrderedLogistic(x * w, [0.5, -1.0])", "E258", "[0.5, -1.0]"),  # literal: the checker
    ("y ~ OrderedLogistic(x * w, cut)", "E258", "cut"),  # a constant: at run time, same place
    ("y ~ OrderedLogistic(x * w, [0.0])", "E421", None),  # category 3 with one cutpoint
    ("y ~ OrderedLogistic(x * w, [0.0, 1.0]) @jaakkola", "E280", None),
    ("y ~ OrderedLogistic(x * w, [0.0, 1.0]) @stick", "E280", None),
])
def test_mistakes_are_located_errors(tmp_path, line, code, where):
    (tmp_path / "d.csv").write_text(CSV)
    text = "const cut = [1.0, 1.0]\n" + HEAD + line
    with pytest.raises(PplError) as caught:
        ppl.compile(text).infer(tmp_path / "d.csv", seed=0)
    assert caught.value.code == code
    if where is not None:
        span = caught.value.span
        assert text.splitlines()[span.line - 1][span.column - 1:span.end_column - 1] == where


def test_ratings_must_be_integers_or_categories():
    with pytest.raises(PplError) as caught:
        ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\ny ~ OrderedLogistic(x * w, [0.0])")
    assert caught.value.code == "E260"


def test_ordinal_outcomes_are_observed_only():
    with pytest.raises(PplError) as caught:
        ppl.compile("w ~ Normal(0, 1)\ny ~ OrderedLogistic(w, [0.0, 1.0])")
    assert caught.value.code == "E257"
