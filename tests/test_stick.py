"""`bound:stick`: the stick-breaking likelihood (thesis §5.6) on the first K − 1 class predictors,
every stick a logistic factor under the shipped piecewise bound, against independent computations:
the thesis's product form, Gauss–Hermite expectations per stick, the L-BFGS optimum of the same
bound, and the binary piecewise rule when K = 2."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit

import ppl
from ppl.infer import likelihoods, links, softmax as rules
from ppl.infer.piecewise import expected_llp, table

from gaussian_optimum import factorised_elbo_optimum, gh_expect
from model_texts import IRIS_SOFTMAX

ROOT = Path(__file__).resolve().parents[1]
MODEL, DATA = ROOT / "models" / "multinomial_logistic.vim", ROOT / "models" / "multinomial_logistic.csv"
LOGISTIC = links.LIKELIHOODS[("Bernoulli", "logistic")]
Q10 = table("quadratic", 10)
SMALL = IRIS_SOFTMAX.replace("softmax(w @ x[n]))", "softmax(w @ x[n])) @stick")


def stick_log_likelihood(y, eta):
    """Σ_j log f_j(η_j) of the sticks with their outcomes and trials (what the rule bounds)."""
    outcome, trials = rules.stick_data(y, eta.shape[-1])
    return np.sum(LOGISTIC.log_f(outcome, trials, eta), -1)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_stick_likelihood_normalises_and_is_the_thesis_product(k):
    """p(C_k) = σ(η_k) Π_{j<k} (1 − σ(η_j)) for k < K, p(C_K) = Π_{j<K} (1 − σ(η_j)), with the
    usual σ(x) = 1/(1 + e^{−x}) (the thesis's §5.6 prints e^{x})."""
    eta = np.random.default_rng(k).normal(0, 3, (400, k - 1))
    probs = np.stack([np.exp(stick_log_likelihood(np.full(400, c), eta)) for c in range(k)], -1)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=0, atol=1e-12)
    remaining = np.cumprod(np.concatenate([np.ones((400, 1)), 1 - expit(eta)], -1), -1)
    product = np.concatenate([expit(eta), np.ones((400, 1))], -1) * remaining
    np.testing.assert_allclose(probs, product, rtol=0, atol=1e-12)


def test_bound_is_below_the_expected_log_likelihood_per_stick():
    """Gauss–Hermite per stick: E[log p] − (sticks read) · ε_max ≤ bound < E[log p]."""
    rng = np.random.default_rng(3)
    m, v, y = rng.normal(0, 3, (300, 4)), rng.uniform(0.01, 4.0, (300, 4)), rng.integers(0, 5, 300)
    bound, g1, g2 = rules.stick(Q10)(y, m, v)
    outcome, trials = rules.stick_data(y, 4)
    exact = sum(gh_expect(lambda eta: outcome[:, j, None] * eta - trials[:, j, None] * np.logaddexp(0.0, eta),
                          m[:, j], v[:, j]) for j in range(4))
    assert np.all(bound < exact)
    assert np.all(exact - bound <= trials.sum(-1) * Q10.max_error)
    assert np.all(g1[trials == 0] == 0) and np.all(g2[trials == 0] == 0)  # sticks past y are not read


def test_two_classes_are_the_binary_piecewise_rule():
    rng = np.random.default_rng(4)
    m, v, y = rng.normal(0, 2, (200, 1)), rng.uniform(0.01, 3.0, (200, 1)), rng.integers(0, 2, 200)
    term, g1, g2 = rules.stick(Q10)(y, m, v)
    b_term, b_g1, b_g2 = likelihoods.piecewise(Q10)(LOGISTIC, (y == 0).astype(float), 1.0, m[:, 0], v[:, 0])
    np.testing.assert_allclose(term, b_term, rtol=0, atol=1e-14)
    np.testing.assert_allclose(g1[:, 0], b_g1, rtol=0, atol=1e-14)
    np.testing.assert_allclose(g2[:, 0], b_g2, rtol=0, atol=1e-14)


@pytest.fixture(scope="module")
def iris():
    frame = pd.read_csv(DATA)
    x = frame[["intercept", "sepal_length", "sepal_width", "petal_length", "petal_width"]].to_numpy()
    return frame, x, pd.Categorical(frame["species"]).codes.astype(int)


def test_fixed_point_is_the_lbfgs_optimum_of_the_bound(iris):
    """Σ_n Σ_j [o_nj m_nj − t_nj E_Q10(m_nj, v_nj)] − Σ_j KL(q_j ‖ prior) over factorised Gaussian
    q(w_1) q(w_2), by L-BFGS over (m, Cholesky of V); w_3, not read by the sticks, keeps its prior."""
    frame, x, y = iris
    rows = np.r_[0:12, 50:62, 100:112]
    outcome, trials = rules.stick_data(y[rows], 2)

    def terms(mm, vv):
        value, d_m, d_v = expected_llp(Q10, mm, vv)
        return np.sum(outcome * mm - trials * value, -1), outcome - trials * d_m, -2 * trials * d_v
    best, means, covs = factorised_elbo_optimum(x[rows, :3], 2, terms)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no sweep lowers the bound on the way
        post = ppl.compile(SMALL).infer(frame.iloc[rows], seed=0, tol=1e-15, max_iter=3000)
    m, v = post["w"].family.mean_cov(post["w"].natural)
    assert post.elbo == pytest.approx(best, abs=1e-6)
    np.testing.assert_allclose(m[:2], means, rtol=0, atol=1e-4)
    np.testing.assert_allclose(v[:2], covs, rtol=0, atol=1e-4)
    np.testing.assert_array_equal(m[2], 0.0)
    np.testing.assert_array_equal(v[2], np.eye(3))


def test_iris_bound_rises_every_sweep_and_classifies(iris):
    _, x, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = ppl.load(MODEL).infer(str(DATA), methods={"y": "bound:stick"}, seed=0, tol=1e-12, max_iter=2000)
    trace = np.asarray(post.trace)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    m, _ = post["w"].family.mean_cov(post["w"].natural)
    eta = x @ m[:2].T
    log_p = np.stack([log_expit(eta[:, 0]), log_expit(eta[:, 1]) + log_expit(-eta[:, 0]),
                      log_expit(-eta[:, 0]) + log_expit(-eta[:, 1])], -1)
    assert np.mean(log_p.argmax(-1) == y) > 0.95


def test_more_pieces_give_a_tighter_bound(iris):
    frame, _, _ = iris
    text = MODEL.read_text()
    elbos = [ppl.compile(text.replace("softmax(w @ x[n]))", f"softmax(w @ x[n])) @stick(pieces={r})"))
             .infer(frame, seed=0, tol=1e-10).elbo for r in (3, 5, 10, 20)]
    assert np.all(np.diff(elbos) > 0)


def test_command_line_method(tmp_path):
    out = tmp_path / "post.json"
    result = subprocess.run([sys.executable, "-m", "ppl.cli", "infer", str(MODEL), str(DATA), "--seed", "0",
                             "--method", "y=bound:stick", "--output", str(out)], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "rules: bound:stick, vmp" in result.stdout
    assert np.asarray(json.loads(out.read_text())["variables"]["w"]["mean"]).shape == (3, 5)


@pytest.mark.parametrize("annotation, code, message", [
    ("@stick(pieces=7)", "E500", "available: 3, 4, 5, 6, 8, 10, 20"),
    ("@stick(kind=linear)", "E271", "no option `kind`"),
])
def test_options_are_checked_where_written(iris, annotation, code, message):
    frame, _, _ = iris
    with pytest.raises(ppl.PplError, match=message) as caught:
        ppl.compile(SMALL.replace("@stick", annotation)).infer(frame, seed=0)
    assert caught.value.code == code and caught.value.span.line == 8


def test_stick_is_for_softmax_categoricals_only():
    with pytest.raises(ppl.PplError) as caught:
        ppl.compile("data X: real[N, D] from x1..x2\ndata y: bool[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                    "y ~ Bernoulli(logistic(X @ w)) @stick").analyze()
    assert caught.value.code == "E280"
