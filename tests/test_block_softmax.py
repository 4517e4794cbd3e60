"""A softmax's class weights in one Gaussian block under Böhning's bound (ppl.infer.factors.
block_softmax): its fixed point against an independent numpy iteration of the same bound, ELBO
ascent, the correlated-margin averages it predicts with, and E381 for what it does not run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import ppl
from ppl.infer.softmax_moments import averages

MODELS = Path(__file__).resolve().parents[1] / "models"
SOFTMAX = """
data x: real[N, D] from (intercept, u, v)
data y: cat(K)[N] from c
for k in 1..K {
  w[k] ~ MvNormal(zeros(D), eye(D))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(w @ x[n]))
}
"""


def _data(n=90, seed=1):
    """Three classes on covariates far from 0: intercept and weights strongly correlated."""
    rng = np.random.default_rng(seed)
    u, v = rng.normal(8, 1, n), rng.normal(-5, 1, n)
    eta = np.column_stack([np.zeros(n), 1.2 * (u - 8), -1.0 * (v + 5)])
    labels = np.array(["a", "b", "c"])[[rng.choice(3, p=p) for p in special.softmax(eta, axis=1)]]
    return pd.DataFrame({"intercept": 1.0, "u": u, "v": v, "c": labels})


def _bohning_fixed_point(x, y, k, sweeps=20000):
    """The joint Böhning fixed point by hand: Σ = (I + A ⊗ XᵀX)⁻¹ (class-major coordinates), and
    μ ← Σ Σ_n C_nᵀ (onehot(y_n) − p(m_n) + A m_n), m_n = W x_n, iterated to convergence."""
    n, d = x.shape
    a = 0.5 * (np.eye(k) - np.ones((k, k)) / k)
    cov = np.linalg.inv(np.eye(k * d) + np.kron(a, x.T @ x))
    mean = np.zeros(k * d)
    onehot = np.eye(k)[y]
    for _ in range(sweeps):
        m = x @ mean.reshape(k, d).T
        pull = onehot - special.softmax(m, axis=1) + m @ a
        new = cov @ (pull.T @ x).ravel()
        if np.max(np.abs(new - mean)) < 1e-13:
            break
        mean = new
    m = x @ mean.reshape(k, d).T
    var = np.einsum("nd,kdje,ne->nkj", x, cov.reshape(k, d, k, d), x)  # Cov[η_nk, η_nj]
    term = m[np.arange(n), y] - special.logsumexp(m, axis=1) - 0.5 * np.einsum("kj,nkj->n", a, var)
    elbo = term.sum() - 0.5 * (mean @ mean + np.trace(cov)) + 0.5 * np.linalg.slogdet(cov)[1] + 0.5 * k * d
    return mean.reshape(k, d), np.sqrt(np.diag(cov)).reshape(k, d), elbo


@pytest.fixture(scope="module")
def fitted():
    frame = _data()
    post = ppl.compile(SOFTMAX).infer(frame, seed=0, methods={"y": "bound:bohning"}, gaussian_block="all",
                                      tol=1e-12, mean_tol=1e-9, max_iter=5000)
    return frame, post


def test_the_blocks_fixed_point_is_bohnings_joint_one(fitted):
    frame, post = fitted
    x = frame[["intercept", "u", "v"]].to_numpy()
    y = pd.Categorical(frame["c"]).codes
    mean, sd, elbo = _bohning_fixed_point(x, y, 3)
    np.testing.assert_allclose(post["w"].mean, mean, atol=1e-6)
    np.testing.assert_allclose(post["w"].sd, sd, rtol=1e-9)
    np.testing.assert_allclose(post.elbo, elbo, atol=1e-6)


def test_the_block_beats_mean_field_and_never_falls(fitted):
    frame, post = fitted
    meanfield = ppl.compile(SOFTMAX).infer(frame, seed=0, methods={"y": "bound:bohning"}, max_iter=5000)
    plain = ppl.compile(SOFTMAX).infer(frame, seed=0, methods={"y": "bound:bohning"}, gaussian_block="all",
                                       accelerate=False, max_iter=300)
    assert post.elbo > meanfield.elbo + 1.0
    assert np.all(np.diff(plain.trace) >= -1e-9 * abs(plain.elbo))
    # the covariates' weights move together along the softmax's shift, which mean field cannot follow
    assert np.all(post["w"].sd[:, 1:] > 3 * meanfield["w"].sd[:, 1:])


def test_prediction_averages_the_softmax_over_the_joint_margin(fitted):
    """P(y* = k) = E[softmax(η)], η ~ N(W̄x, Cov) with the classes' covariance from the block's
    draws (an independent path) matches the prediction; independent margins would not."""
    frame, post = fitted
    new = _data(12, seed=7).assign(c=np.nan)
    pred = post.predict(new)
    probs = pred.table()[["p[a]", "p[b]", "p[c]"]].to_numpy()
    draws = post.draws(200_000, seed=3)["w"]
    x = new[["intercept", "u", "v"]].to_numpy()
    eta = np.einsum("skd,nd->snk", draws, x)
    np.testing.assert_allclose(probs, special.softmax(eta, axis=-1).mean(0), atol=4e-3)
    mean, var = eta.mean(0), eta.var(0)
    independent = averages(mean, var)[1]
    assert np.max(np.abs(independent - probs)) > 0.05


@pytest.mark.parametrize("k", [2, 3])
def test_averages_over_correlated_margins_are_quadratures_over_the_differences(k):
    """E[softmax(η)] depends on the K − 1 differences η_j − η_r alone: against adaptive
    quadrature over them (one or two dimensions)."""
    rng = np.random.default_rng(k)
    m = rng.normal(0, 1.5, k)
    root = rng.normal(0, 0.7, (k, k))
    cov = root @ root.T + 0.1 * np.eye(k)
    got = averages(m[None], np.diag(cov)[None].copy(), cov=cov[None])[1][0]
    diff = np.eye(k)[1:] - np.eye(k)[0]  # d_j = η_j − η_0
    mu, s = diff @ m, diff @ cov @ diff.T
    density = stats.multivariate_normal(mu, s)
    def p0(*d):
        return 1.0 / (1.0 + np.sum(np.exp(d)))
    limits = [(mu[j] - 12 * np.sqrt(s[j, j]), mu[j] + 12 * np.sqrt(s[j, j])) for j in range(k - 1)]
    value, _ = integrate.nquad(lambda *d: p0(*d) * density.pdf(d), limits, opts={"epsabs": 1e-11, "epsrel": 1e-10})
    assert abs(got[0] - value) < (1e-9 if k == 2 else 1e-6)


def test_a_block_runs_a_softmax_under_bohning_only():
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(SOFTMAX).infer(_data(), seed=0, methods={"y": "ncvmp"}, gaussian_block="all", max_iter=2)
    assert info.value.code == "E381" and "bound:bohning" in info.value.message
    empty = _data()
    empty.loc[3, "c"] = np.nan
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(SOFTMAX).infer(empty, seed=0, methods={"y": "bound:bohning"}, gaussian_block="all", max_iter=2)
    assert info.value.code == "E381" and "empty cells" in info.value.message
