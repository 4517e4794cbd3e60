"""A softmax's class weights in one Gaussian block (ppl.infer.factors.block_softmax): under
Böhning's bound its fixed point against an independent numpy iteration of the same bound and ELBO
ascent; under NC-VMP a stationary point of the exact ELBO, computed apart by a product
Gauss–Hermite rule; the correlated-margin averages it predicts with; E381 for what it does not run."""

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


def _exact_elbo(mean, cov, x, y, k):
    """The ELBO of q(vec W) = N(mean, cov) (class-major) under w[k] ~ N(0, I): Σ_n (m_ny −
    E[lse(η_n)]) by a 60 × 60 Gauss–Hermite rule over the differences η_j − η_0, plus the prior's
    expectation and the entropy."""
    n, d = x.shape
    c = np.einsum("nd,kdje,ne->nkj", x, cov.reshape(k, d, k, d), x)
    m = x @ mean.reshape(k, d).T
    diff = np.eye(k)[1:] - np.eye(k)[0]
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    grid = np.stack(np.meshgrid(nodes, nodes, indexing="ij"), -1).reshape(-1, 2)
    w = np.outer(weights, weights).ravel() / (2 * np.pi)
    lse = np.empty(n)
    for i in range(n):
        root = np.linalg.cholesky(diff @ c[i] @ diff.T)
        d_ = diff @ m[i] + grid @ root.T
        lse[i] = m[i, 0] + np.log1p(np.exp(d_).sum(1)) @ w
    size = k * d
    prior = -0.5 * (mean @ mean + np.trace(cov)) - 0.5 * size * np.log(2 * np.pi)
    entropy = 0.5 * (size * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1])
    return np.sum(m[np.arange(n), y] - lse) + prior + entropy


def test_ncvmps_block_ends_at_a_stationary_point_of_the_exact_elbo():
    """NC-VMP's fixed points are the ELBO's stationary points: at the block's q, the exact ELBO
    (computed apart) equals the run's, and moving the mean or scaling the covariance along any
    direction changes it only to second order."""
    frame = _data()
    post = ppl.compile(SOFTMAX).infer(frame, seed=0, gaussian_block="all", tol=1e-13, mean_tol=1e-10,
                                      max_iter=5000)
    meanfield = ppl.compile(SOFTMAX).infer(frame, seed=0)
    assert post.converged and post.elbo > meanfield.elbo + 1.0
    block, = post.blocks
    h, j = block.layout.dense(block.natural)
    cov = np.linalg.inv(j)
    mean = cov @ h
    x, y = frame[["intercept", "u", "v"]].to_numpy(), pd.Categorical(frame["c"]).codes
    at = _exact_elbo(mean, cov, x, y, 3)
    assert abs(at - post.elbo) < 1e-7
    rng = np.random.default_rng(0)
    step, sd = 1e-4, np.sqrt(np.diag(cov))

    def slope(f, at):
        return (f(at + step) - f(at - step)) / (2 * step)

    for _ in range(3):  # the mean along a direction in sd units: flat at 0, not 0.1 sd away
        direction = rng.standard_normal(len(mean)) * sd
        along = lambda t: _exact_elbo(mean + t * direction, cov, x, y, 3)  # noqa: E731
        assert abs(slope(along, 0.0)) < 1e-4 * abs(slope(along, 0.1))
        root = rng.standard_normal((len(mean), len(mean)))  # the covariance tilted: Σ → T Σ Tᵀ
        tilted = lambda t: _exact_elbo(mean, (np.eye(len(mean)) + t * (root + root.T) / 20) @ cov  # noqa: E731
                                       @ (np.eye(len(mean)) + t * (root + root.T) / 20).T, x, y, 3)
        assert abs(slope(tilted, 0.0)) < 1e-4 * abs(slope(tilted, 0.1))


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


def test_all_leaves_a_softmax_it_cannot_run_in_mean_field():
    """`--gaussian-block all` takes what a block runs: a softmax's class weights under `cvi`, or with
    an empty outcome, stay in mean field (the other Gaussians in the block, as `ppl check` says);
    named in a block, they are E381 (below)."""
    frame = _data().assign(z=np.random.default_rng(0).normal(size=90))
    text = SOFTMAX.replace("data y: cat(K)[N] from c", "data y: cat(K)[N] from c\ndata z: real[N]") + \
        "b0 ~ Normal(0, 1)\nb ~ Normal(0, 1)\nfor n in 1..N {\n  z[n] ~ Normal(b0 + b * x[n, 2], 4.0)\n}\n"
    model = ppl.compile(text)
    empty = frame.copy()
    empty.loc[3, "c"] = np.nan
    for data, rule in ((frame, "cvi"), (empty, "ncvmp")):
        post = model.infer(data, seed=0, methods={"y": rule}, gaussian_block="all", max_iter=50)
        assert [b.members for b in post.blocks] == [("b0", "b")]
        assert model.check_report(data, methods={"y": rule}, gaussian_block="all")["gaussian_blocks"][0][
            "variables"] == ["b0", "b"]
    post = model.infer(frame, seed=0, gaussian_block="all", max_iter=50)
    assert [b.members for b in post.blocks] == [("w", "b0", "b")]


def test_a_block_runs_a_softmax_under_ncvmp_or_bohning_only():
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(SOFTMAX).infer(_data(), seed=0, methods={"y": "cvi"}, gaussian_block="w", max_iter=2)
    assert info.value.code == "E381" and "`ncvmp` or `bound:bohning`" in info.value.message
    empty = _data()
    empty.loc[3, "c"] = np.nan
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(SOFTMAX).infer(empty, seed=0, methods={"y": "bound:bohning"}, gaussian_block="w", max_iter=2)
    assert info.value.code == "E381" and "empty cells" in info.value.message


def test_four_classes_average_over_the_fixed_points():
    """K ≥ 4: E[lse], E[p] and the curvature E[diag p − ppᵀ] from the fixed quasi-random points,
    against a 24³-node Gauss–Hermite rule over the differences (an independent path); each row of
    the curvature sums to 0."""
    from ppl.infer.softmax_joint import joint_averages
    rng = np.random.default_rng(4)
    m = rng.normal(0, 1, (3, 4))
    root = rng.normal(0, 0.5, (3, 4, 4))
    cov = root @ np.swapaxes(root, 1, 2) + 0.1 * np.eye(4)
    lse, p, curvature = joint_averages(m, cov)
    nodes, weights = np.polynomial.hermite_e.hermegauss(24)
    grid = np.stack(np.meshgrid(nodes, nodes, nodes, indexing="ij"), -1).reshape(-1, 3)
    w = np.einsum("i,j,k->ijk", weights, weights, weights).ravel() / (2 * np.pi) ** 1.5
    diff = np.eye(4)[1:] - np.eye(4)[0]
    for i in range(3):
        d = diff @ m[i] + grid @ np.linalg.cholesky(diff @ cov[i] @ diff.T).T
        eta = np.column_stack([np.zeros(len(d)), d])
        probs = special.softmax(eta, axis=1)
        assert abs(lse[i] - (m[i, 0] + special.logsumexp(eta, axis=1) @ w)) < 2e-3
        np.testing.assert_allclose(p[i], w @ probs, atol=2e-3)
        np.testing.assert_allclose(curvature[i], np.diag(w @ probs) - np.einsum("s,sk,sl->kl", w, probs, probs),
                                   atol=2e-3)
    np.testing.assert_allclose(curvature.sum(-1), 0.0, atol=1e-14)


def test_mean_field_says_when_the_classes_sds_are_too_narrow():
    """Covariates far from 0: NC-VMP's mean field over the classes gives the covariates' weights a
    quarter of the joint q's sds, and the run says so (ppl.infer.coverage); the block it names
    runs, with the sds the note implies, and no note."""
    frame = _data()
    meanfield = ppl.compile(SOFTMAX).infer(frame, seed=0)
    note, = [n for n in meanfield.notes if "joint Gaussian q over `w`" in n]
    assert "through `y[n]`" in note and "--gaussian-block w fits them jointly" in note
    ratio = float(note.split(" is ")[1].split(" of ")[0])
    block = ppl.compile(SOFTMAX).infer(frame, seed=0, gaussian_block="w")
    worst = np.min(meanfield["w"].sd / block["w"].sd)
    assert ratio < 0.5 and abs(worst - ratio) < 0.05 * ratio
    assert not any("joint Gaussian q over" in n for n in block.notes)
