"""Categorical(softmax(η)) with η a K-dimensional MvNormal (the CTM's document logits): Laplace
and delta-method VI (Wang & Blei) against independent computations.

f(η) = ηᵀn − N lse(η) − ½(η − m0)ᵀΛ0(η − m0) is written out again here, with its Hessian; the
Laplace q must be its scipy mode and inverse negative Hessian, the delta q must satisfy the
fixed-point equations of W&B eq 15, and every derivative of `ppl.infer.softmax_vector` is
checked by finite differences (including the CTM trace derivative the paper misprints).
"""

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer import softmax as rules, softmax_vector as sv

ROOT = Path(__file__).resolve().parents[1]
GROUPED = """
data g: cat(G)[N]
data y: cat(K)[N]
for j in 1..G {
  eta[j] ~ MvNormal(0.5 * ones(K), 2.0 * eye(K))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(eta[g[n]])) @RULE
}
"""
M0, P0 = 0.5, 2.0  # the prior of GROUPED: mean 0.5·1, precision 2·I


def f(eta, n, m0, prec0):
    d = eta - m0
    return n @ eta - n.sum() * logsumexp(eta) - 0.5 * d @ prec0 @ d


def grad_f(eta, n, m0, prec0):
    return n - n.sum() * softmax(eta) - prec0 @ (eta - m0)


def hess_f(eta, n, m0, prec0):
    p = softmax(eta)
    return -n.sum() * (np.diag(p) - np.outer(p, p)) - prec0


def scipy_mode(n, m0, prec0):
    res = minimize(lambda e: -f(e, n, m0, prec0), np.zeros(len(n)), jac=lambda e: -grad_f(e, n, m0, prec0),
                   hess=lambda e: -hess_f(e, n, m0, prec0), method="trust-exact", options={"gtol": 1e-13})
    return res.x


def grouped_data(seed=1, rows=80, groups=3):
    rng = np.random.default_rng(seed)
    return {"g": rng.integers(1, groups + 1, rows).astype(str),
            "y": rng.choice(list("abcd"), rows, p=[0.5, 0.3, 0.15, 0.05])}


def fit_grouped(rule, data):
    """(q means, q covariances, counts per group) of GROUPED under `rule`."""
    model = ppl.compile(GROUPED.replace("RULE", rule))
    post = model.infer(data, seed=0, tol=1e-12)
    arrays = model.bind(data).arrays
    counts = np.zeros((len(post.levels["g"]), 4))
    np.add.at(counts, (arrays["g"], arrays["y"]), 1.0)
    mean, cov = post["eta"].family.mean_cov(post["eta"].natural)
    assert any("not a bound" in note for note in post.notes)
    return mean, cov, counts


def random_document(seed=0, k=5):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(k, k))
    return (rng.normal(size=k), rng.gamma(1.0, 8.0, k), rng.normal(size=k),
            a @ a.T / k + np.eye(k), np.diag(rng.uniform(0.05, 0.4, k)))


def numeric_gradient(fun, x, h=1e-6):
    e = np.eye(len(x))
    return np.array([(fun(x + h * e[i]) - fun(x - h * e[i])) / (2 * h) for i in range(len(x))])


# ---- Laplace ------------------------------------------------------------------------------------

def test_laplace_is_the_mode_and_inverse_negative_hessian_per_group():
    """The engine's λ = prior message + site reproduces N(η̂, −∇²f(η̂)⁻¹) of each group."""
    mean, cov, counts = fit_grouped("laplace", grouped_data())
    m0, prec0 = np.full(4, M0), P0 * np.eye(4)
    for j, n in enumerate(counts):
        mode = scipy_mode(n, m0, prec0)
        np.testing.assert_allclose(mean[j], mode, rtol=0, atol=1e-8)
        np.testing.assert_allclose(cov[j], np.linalg.inv(-hess_f(mode, n, m0, prec0)), rtol=0, atol=1e-8)


def test_laplace_site_plus_prior_is_the_laplace_gaussian_on_the_ctm():
    """Latent topics: after a few sweeps on the CTM, the update of q(eta) — the sum of the messages —
    is the Laplace Gaussian of each document at its expected counts E[n_d] (from q(z)) and its
    expected prior N(E[mu], E[Lambda]⁻¹), written out here from the state."""
    model = ppl.load(ROOT / "models" / "ctm.vim")
    dataset = model.bind(str(ROOT / "models" / "ctm.csv"))
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    state = run(problem, Options(max_iter=3, seed=0)).state
    k = 10
    message = sum(f.message(state, "eta") for f in problem.neighbours["eta"])
    mean, cov = problem.families["eta"].mean_cov(message)
    r = state.moments("z")
    counts = np.zeros((100, k))
    np.add.at(counts, dataset.arrays["doc"], r)
    m0 = state.moments("mu")[0, :k]
    prec0 = state.moments("Lambda")[0, :k * k].reshape(k, k)
    for d in (0, 17, 99):
        mode = scipy_mode(counts[d], m0, prec0)
        np.testing.assert_allclose(mean[d], mode, rtol=0, atol=1e-8)
        np.testing.assert_allclose(cov[d], np.linalg.inv(-hess_f(mode, counts[d], m0, prec0)), rtol=0, atol=1e-8)
    # the factor's objective term: Σ_d n_dᵀμ_d − N_d lse(μ_d) − ½N_d Tr{S(π_d)Σ_d} under the current q(eta)
    (factor,) = [f for f in problem.factors if f.name == "z[t]"]
    mu, sigma = problem.families["eta"].mean_cov(state.natural["eta"])
    expected = sum(counts[d] @ mu[d] - counts[d].sum() * logsumexp(mu[d]) - 0.5 * counts[d].sum() * np.trace(
        (np.diag(softmax(mu[d])) - np.outer(softmax(mu[d]), softmax(mu[d]))) @ sigma[d]) for d in range(100))
    assert factor.elbo(state) == pytest.approx(expected, rel=1e-12)


def test_the_message_to_a_topic_is_the_second_order_expectation():
    """E[log softmax(η)_k] ≈ μ_k − lse(μ) − ½Tr{S(π)Σ} is a second-order expansion: against the exact
    expectation (product Gauss–Hermite, diagonal Σ = sC), its error falls as s² (odd orders vanish),
    while the correction itself is of order s."""
    mean = np.array([[0.3, -0.8, 1.1]])
    c = np.array([1.0, 0.5, 2.0])
    errors = []
    for s in (0.02, 0.01):
        ours = sv.expected_log_softmax(mean, np.diag(s * c)[None])[0]
        exact = np.array([rules.expected(np.array([k]), mean, s * c[None])[0][0] for k in range(3)])
        plug_in = mean[0] - logsumexp(mean[0])
        errors.append(np.max(np.abs(ours - exact)))
        assert errors[-1] < 0.05 * np.max(np.abs(plug_in - exact))
    assert 0.2 < errors[1] / errors[0] < 0.3


# ---- delta: derivatives -------------------------------------------------------------------------

def test_gradient_hessian_and_trace_derivative_by_finite_differences():
    eta, n, m0, prec0, _ = random_document()
    a = np.random.default_rng(3).normal(size=(5, 5))
    cov = a @ a.T / 5 + 0.1 * np.eye(5)  # a full Σ
    one = lambda e: sv.objective(e[None], n[None], m0[None], prec0[None])[0]
    np.testing.assert_allclose(sv.gradient(eta[None], n[None], m0[None], prec0[None])[0],
                               numeric_gradient(one, eta), rtol=0, atol=1e-6)
    np.testing.assert_allclose(-sv.precision(eta[None], n[None], prec0[None])[0],
                               np.array([numeric_gradient(lambda e: grad_f(e, n, m0, prec0)[i], eta)
                                         for i in range(5)]), rtol=0, atol=1e-6)
    tr = lambda e: sv.trace(e[None], cov[None], n[None], prec0[None])[0]
    np.testing.assert_allclose(sv.trace_gradient(eta[None], cov[None], n[None])[0], numeric_gradient(tr, eta),
                               rtol=0, atol=1e-6)
    np.testing.assert_allclose(tr(eta), np.trace(hess_f(eta, n, m0, prec0) @ cov), rtol=1e-12)


def test_the_printed_ctm_trace_derivative_fails_and_the_corrected_one_holds():
    """W&B App. A prints ∂Tr/∂θ_i = π_i(1 − 2π_i)(Σ_k π_kΣ_kk − 1) for a diagonal Σ. The digest's
    correction, Nπ_j[(2π_j − 1)Σ_jj − Σ_i π_i(2π_i − 1)Σ_ii], matches finite differences and our
    full-Σ form; the printed one does not."""
    eta, n, m0, prec0, cov = random_document(seed=5)
    big_n, pi, s = n.sum(), softmax(eta), np.diag(cov)
    numeric = numeric_gradient(lambda e: sv.trace(e[None], cov[None], n[None], prec0[None])[0], eta)
    corrected = big_n * pi * ((2 * pi - 1) * s - np.sum(pi * (2 * pi - 1) * s))
    printed = pi * (1 - 2 * pi) * (np.sum(pi * s) - 1)
    np.testing.assert_allclose(corrected, numeric, rtol=0, atol=1e-6)
    np.testing.assert_allclose(sv.trace_gradient(eta[None], cov[None], n[None])[0], corrected, rtol=1e-12)
    assert np.max(np.abs(printed - numeric)) > 0.1 * np.max(np.abs(numeric))


# ---- delta: the fixed point ---------------------------------------------------------------------

def test_delta_fixed_point_of_eq_15_per_group():
    """At the delta q: ∇f(μ) + ½∇Tr{∇²f(μ)Σ} = 0 and Σ = −∇²f(μ)⁻¹; the mean is not the mode."""
    data = grouped_data()
    mean, cov, counts = fit_grouped("delta", data)
    laplace_mean = fit_grouped("laplace", data)[0]
    m0, prec0 = np.full(4, M0), P0 * np.eye(4)
    for j, n in enumerate(counts):
        stationary = grad_f(mean[j], n, m0, prec0) + 0.5 * sv.trace_gradient(mean[j][None], cov[j][None],
                                                                              n[None])[0]
        np.testing.assert_allclose(stationary, 0.0, rtol=0, atol=1e-6)
        np.testing.assert_allclose(cov[j], np.linalg.inv(-hess_f(mean[j], n, m0, prec0)), rtol=0, atol=1e-6)
    assert np.max(np.abs(mean - laplace_mean)) > 1e-3


# ---- W&B's E-step on one CTM document: the eq-19 trace ----------------------------------------

def eq19(mu, cov, r, log_beta_w, n, m0, prec0):
    """Eq 19 on one document with topics β fixed: E_q[log p(w, z, η)] + H[q(z)] + ½log|Σ|, the
    expectation over η by the second-order expansion (constants dropped)."""
    p = softmax(mu)
    d = mu - m0
    eta_terms = (n @ mu - n.sum() * logsumexp(mu) - 0.5 * n.sum() * np.trace((np.diag(p) - np.outer(p, p)) @ cov)
                 - 0.5 * d @ prec0 @ d - 0.5 * np.trace(prec0 @ cov))
    return (eta_terms + np.sum(r * log_beta_w) - np.sum(r * np.log(np.maximum(r, 1e-300)))
            + 0.5 * np.linalg.slogdet(cov)[1])


def document_trace(rule, iterations=100):
    """Fig. 2 of W&B on document 1 of ctm.csv: alternate q(η) (the rule) and q(z) (eq 16)."""
    import pandas as pd
    frame = pd.read_csv(ROOT / "models" / "ctm.csv")
    words = pd.factorize(frame["word"])[0][frame["doc"].to_numpy() == frame["doc"].iloc[0]]
    rng = np.random.default_rng(0)
    k, vocabulary = 10, 500
    log_beta_w = np.log(rng.dirichlet(np.full(vocabulary, 0.1), size=k))[:, words].T  # (tokens, K)
    m0, prec0 = np.zeros(k), np.eye(k)
    r = softmax(rng.normal(size=(len(words), k)), -1)
    mu, trace = np.zeros(k), []
    for _ in range(iterations):
        n = r.sum(0)
        mu = sv.SOLVERS[rule](n[None], m0[None], prec0[None], mu[None])[0]
        cov = np.linalg.inv(sv.precision(mu[None], n[None], prec0[None])[0])
        r = softmax(log_beta_w + sv.expected_log_softmax(mu[None], cov[None])[0], -1)
        trace.append(eq19(mu, cov, r, log_beta_w, r.sum(0), m0, prec0))
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) < 1e-5 * abs(trace[-1]):
            break
    return np.array(trace)


@pytest.mark.parametrize("rule", ["laplace", "delta"])
def test_eq19_rises_and_plateaus_on_a_document(rule):
    """W&B's protocol (relative change < 1e-5 within 100 iterations) stops on a plateau above the
    start. Under delta every step is coordinate ascent on eq 19 (q(z) maximises it exactly, the
    delta q(η) step raises eq 15 from the previous μ), so its trace never falls; Laplace's q(η) is
    not eq 19's maximiser, and only its plateau is asserted."""
    trace = document_trace(rule)
    assert len(trace) < 100
    assert trace[-1] > trace[0]
    if rule == "delta":
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))


# ---- the observed-class softmax of iris: laplace per class ---------------------------------------

@pytest.mark.filterwarnings("ignore::ppl.infer.engine.DampingWarning")
def test_laplace_on_iris_is_the_map_with_the_per_class_hessian_blocks():
    """Class-factorised q(W) = Π_k q(w_k) with the point-derivative sites: the fixed point's mean
    solves Λ0(w_k − 0) = Σ_n (y_nk − p_nk)x_n, the MAP of W (scipy here), and each q(w_k)'s
    precision is the k-th diagonal block of the negative Hessian at it."""
    import pandas as pd
    model = ppl.load(ROOT / "models" / "multinomial_logistic.vim")
    frame = pd.read_csv(ROOT / "models" / "multinomial_logistic.csv")
    x = frame[["intercept", "sepal_length", "sepal_width", "petal_length", "petal_width"]].to_numpy()
    y = pd.factorize(frame["species"], sort=True)[0]
    k, d = 3, x.shape[1]
    onehot = np.eye(k)[y]

    def neg_log_post(flat):
        w = flat.reshape(k, d)
        eta = x @ w.T
        return -(np.sum(onehot * eta) - np.sum(logsumexp(eta, axis=1))) + 0.5 * np.sum(w * w)

    def neg_grad(flat):
        w = flat.reshape(k, d)
        return (-((onehot - softmax(x @ w.T, -1)).T @ x) + w).ravel()

    w_map = minimize(neg_log_post, np.zeros(k * d), jac=neg_grad, method="BFGS", options={"gtol": 1e-11}).x
    w_map = w_map.reshape(k, d)
    post = model.infer(str(ROOT / "models" / "multinomial_logistic.csv"), seed=0, tol=1e-14, max_iter=3000,
                       methods={"y": "laplace"})
    mean, cov = post["w"].family.mean_cov(post["w"].natural)
    np.testing.assert_allclose(mean, w_map, rtol=0, atol=1e-6)
    p = softmax(x @ w_map.T, -1)
    for c in range(k):
        block = np.eye(d) + (x * (p[:, c] * (1 - p[:, c]))[:, None]).T @ x
        np.testing.assert_allclose(np.linalg.inv(cov[c]), block, rtol=1e-6)
