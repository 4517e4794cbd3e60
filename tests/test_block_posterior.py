"""A Gaussian block's joint q in the Posterior: draws, save and load, prediction, scoring and
imputation see the members' correlations. References: the block's dense covariance J⁻¹ (one
inverse, apart from the arrow's elimination and the predictive's correction) and adaptive
quadrature over the exact margin."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import ppl

MODELS = Path(__file__).resolve().parents[1] / "models"

# an intercept beside covariates far from 0: the intercept and the weights are strongly
# anti-correlated under q, and a margin that drops that comes out far wider
RAW = """
data X: real[N, D]
data y: bool[N]
b0 ~ Normal(0, sd=10)
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(b0 + X @ w))
"""


def _raw_data(n=80, seed=3):
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.normal(20, 2, n), rng.normal(-10, 1, n)])
    eta = -1 + 0.3 * (x[:, 0] - 20) - 0.8 * (x[:, 1] + 10)
    return x, rng.random(n) < special.expit(eta)


def _dense(block):
    """(mean, covariance) of the whole block from its precision, inverted densely."""
    h, j = block.layout.dense(block.natural)
    cov = np.linalg.inv(j)
    return cov @ h, cov


def _coordinates(block, name, element=0):
    place = block.placements[name]
    return place.coordinates(np.array([element]))[0]


def _expected_sigmoid(mean, var):
    sd = np.sqrt(var)
    value, _ = integrate.quad(lambda t: special.expit(t) * stats.norm.pdf(t, mean, sd), mean - 30 * sd,
                              mean + 30 * sd, epsabs=1e-13, epsrel=1e-12, limit=200)
    return value


@pytest.fixture(scope="module")
def raw():
    x, y = _raw_data()
    post = ppl.compile(RAW).infer({"X": x[:60], "y": y[:60]}, seed=0, gaussian_block="all")
    return post, x[60:], y[60:]


def test_draws_have_the_blocks_covariance(raw):
    post, _, _ = raw
    block, = post.blocks
    mean, cov = _dense(block)
    draws = post.draws(60000, seed=1)
    z = np.column_stack([draws["b0"], draws["w"]])
    assert block.members == ("b0", "w") and z.shape == (60000, 3)
    corr = np.corrcoef(z.T)
    exact = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert exact[0, 1] < -0.5  # what mean field's independent draws would miss
    np.testing.assert_allclose(corr, exact, atol=0.01)
    np.testing.assert_allclose(z.mean(0), mean, atol=4 * np.sqrt(np.diag(cov) / 60000).max())


def test_draws_of_a_hierarchy_are_joint_across_the_groups_and_the_corner():
    """Corner first, then each group given the corner: Cov[mu_a, a[g]] and Cov[a[g], b[g]] as
    J⁻¹ says; a Gamma member (held as u = log τ) is drawn as exp(u)."""
    post = ppl.load(MODELS / "hierarchical_logistic.vim").infer(MODELS / "hierarchical_logistic.csv", seed=0,
                                                                 gaussian_block="all")
    block, = post.blocks
    _, cov = _dense(block)
    draws = post.draws(80000, seed=2)
    pairs = [(("mu_a", 0), ("a", 0)), (("a", 2), ("b", 2)), (("mu_b", 0), ("b", 5)), (("tau_a", 0), ("mu_a", 0))]
    for (n1, e1), (n2, e2) in pairs:
        i, k = _coordinates(block, n1, e1)[0], _coordinates(block, n2, e2)[0]
        if block.placements[n1].local:
            i = block.layout.corner + e1 * block.layout.local + block.placements[n1].base
        if block.placements[n2].local:
            k = block.layout.corner + e2 * block.layout.local + block.placements[n2].base
        u1 = np.log(draws[n1]) if n1 in block.logs else np.reshape(draws[n1], (len(draws[n1]), -1))[:, e1]
        u2 = np.reshape(draws[n2], (len(draws[n2]), -1))[:, e2]
        np.testing.assert_allclose(np.cov(u1, u2)[0, 1], cov[i, k], atol=0.03 * np.sqrt(cov[i, i] * cov[k, k]))
    assert block.logs == ("tau_a", "tau_b") and np.all(draws["tau_a"] > 0)


def test_a_saved_block_loads_with_the_same_draws(raw, tmp_path):
    post, _, _ = raw
    path = tmp_path / "post.json"
    post.save(path)
    back = ppl.Posterior.load(path)
    assert [b.key for b in back.blocks] == ["[b0, w]"]
    first, again = post.draws(50, seed=4), back.draws(50, seed=4)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    doc = json.loads(path.read_text())
    del doc["q"]["blocks"]  # a file written before blocks were kept: marginals only
    path.write_text(json.dumps(doc))
    assert ppl.Posterior.load(path).blocks == []


def test_a_damaged_block_entry_is_e800(raw, tmp_path):
    post, _, _ = raw
    path = tmp_path / "post.json"
    post.save(path)
    doc = json.loads(path.read_text())
    doc["q"]["blocks"][0]["natural"] = doc["q"]["blocks"][0]["natural"][:-1]
    path.write_text(json.dumps(doc))
    with pytest.raises(ppl.OptionError) as info:
        ppl.Posterior.load(path)
    assert info.value.code == "E800" and "q.blocks.0" in info.value.message


def test_prediction_and_score_integrate_over_the_joint_margin(raw):
    """P(y* = 1) = E[σ(η)], η ~ N(cᵀμ, cᵀΣc) with Σ the block's J⁻¹: the cross terms count."""
    post, x, y = raw
    block, = post.blocks
    mean, cov = _dense(block)
    c = np.column_stack([np.ones(len(x)), x])
    exact = np.array([_expected_sigmoid(m, v) for m, v in zip(c @ mean, np.einsum("ni,ij,nj->n", c, cov, c))])
    independent = np.einsum("ni,i,ni->n", c, np.diag(cov), c)
    assert np.all(independent > 20 * np.einsum("ni,ij,nj->n", c, cov, c))  # the margin mean field would give
    pred = post.predict({"X": x, "y": np.full(len(x), np.nan)})
    np.testing.assert_allclose(pred["y"]["mean"], exact, atol=1e-9)
    score = post.score({"X": x, "y": y})
    np.testing.assert_allclose(score.total, np.sum(np.where(y, np.log(exact), np.log1p(-exact))), atol=1e-8)


def test_a_new_groups_effect_correlates_with_the_block_through_its_prior_mean():
    """A seen group's row reads (a[g], b[g]) jointly with the corner; a new group's, with no
    observed rows, reads u = mu + ε (Var ε = E[1/τ]): its margin's variance is
    Var[mu_a + mu_b x] (joint) + E[1/τ_a] + x² E[1/τ_b]."""
    frame = pd.read_csv(MODELS / "hierarchical_logistic.csv")
    train = frame[frame.site != "site_f"].iloc[:200]
    post = ppl.load(MODELS / "hierarchical_logistic.vim").infer(train, seed=0, gaussian_block="mu_a,mu_b,a,b")
    block, = post.blocks
    mean, cov = _dense(block)
    new = pd.concat([frame[frame.site == "site_b"].iloc[-3:], frame[frame.site == "site_f"].iloc[:3]])
    levels = sorted(train.site.unique())
    inverse = {t: float(post[t].params()["rate"] / (post[t].params()["shape"] - 1)) for t in ("tau_a", "tau_b")}
    exact = []
    for site, x in zip(new.site, new.x):
        c = np.zeros(block.layout.dim)
        if site in levels:
            g = levels.index(site)
            base = block.layout.corner + g * block.layout.local
            c[base + block.placements["a"].base], c[base + block.placements["b"].base] = 1.0, x
            extra = 0.0
        else:
            c[_coordinates(block, "mu_a")[0]], c[_coordinates(block, "mu_b")[0]] = 1.0, x
            extra = inverse["tau_a"] + x * x * inverse["tau_b"]
        exact.append(_expected_sigmoid(c @ mean, c @ cov @ c + extra))
    pred = post.predict(new.assign(y=np.nan))
    np.testing.assert_allclose(pred["y"]["mean"], exact, atol=1e-9)


def test_imputed_cells_of_a_block_fit_use_the_joint_margin():
    """Empty response cells in the training data, under a block: reported by the predictive of
    the joint margin, N(cᵀμ, cᵀΣc + 1/τ), as `predict` gives it."""
    x, _ = _raw_data()
    y = -1 + 0.3 * (x[:, 0] - 20) - 0.8 * (x[:, 1] + 10) + np.random.default_rng(5).normal(0, 0.5, len(x))
    y[:5] = np.nan
    post = ppl.compile(RAW.replace("bool", "real").replace("Bernoulli(logistic(b0 + X @ w))",
                                                            "Normal(b0 + X @ w, 4.0)")).infer(
        {"X": x, "y": y}, seed=0, gaussian_block="all")
    block, = post.blocks
    mean, cov = _dense(block)
    c = np.column_stack([np.ones(5), x[:5]])
    np.testing.assert_allclose(post["y"].mean[:5], c @ mean, atol=1e-10)
    np.testing.assert_allclose(post["y"].sd[:5], np.sqrt(np.einsum("ni,ij,nj->n", c, cov, c) + 0.25), rtol=1e-9)


def test_mean_field_keeps_no_block():
    post = ppl.compile(RAW).infer(dict(zip(("X", "y"), _raw_data(40))), seed=0)
    assert post.blocks == [] and not any("is joint" in n for n in post.notes)


def test_a_block_statement_predicts_as_the_switch_does(raw):
    """`block (b0, w)` in the model text: the fold-in is mean field (it was a KeyError on the
    block's key), the block's correlations enter through the margin, as with --gaussian-block."""
    post, x, _ = raw
    x_all, y_all = _raw_data()
    stated = ppl.compile(RAW + "block (b0, w)\n").infer({"X": x_all[:60], "y": y_all[:60]}, seed=0)
    new = {"X": x, "y": np.full(len(x), np.nan)}
    np.testing.assert_allclose(stated.predict(new)["y"]["mean"], post.predict(new)["y"]["mean"], rtol=1e-12)


def test_all_leaves_out_the_precision_of_a_response_with_empty_cells():
    """`--gaussian-block all` with empty response cells: their q would read τ from outside the
    block (E633 when a block names τ), so `all` leaves τ in mean field, as `ppl check` says; the
    imputed cells' predictive variance is cᵀΣc + E[1/τ] (τ's Gamma)."""
    x, _ = _raw_data(50)
    y = 1 + 0.5 * x[:, 0] + np.random.default_rng(6).normal(0, 0.5, 50)
    y[:3] = np.nan
    text = ("data x: real[N]\ndata y: real[N]\nb0 ~ Normal(0, 1)\ntau ~ Gamma(2, 1)\nc ~ Normal(0, 1)\n"
            "for n in 1..N {\n  y[n] ~ Normal(b0 + c * x[n], tau)\n}\n")
    model = ppl.compile(text)
    post = model.infer({"x": x[:, 0], "y": y}, seed=0, gaussian_block="all")
    block, = post.blocks
    assert block.members == ("b0", "c") and post["tau"].family.name == "Gamma"
    _, cov = _dense(block)
    c = np.column_stack([np.ones(3), x[:3, 0]])
    shape, rate = post["tau"].params()["shape"], post["tau"].params()["rate"]
    np.testing.assert_allclose(post["y"].sd[:3], np.sqrt(np.einsum("ni,ij,nj->n", c, cov, c) + rate / (shape - 1)),
                               rtol=1e-6)
    report = model.check_report({"x": x[:, 0], "y": y}, gaussian_block="all")
    assert report["gaussian_blocks"][0]["variables"] == ["b0", "c"]
    with pytest.raises(ppl.ModelError) as info:  # named, it cannot run
        model.infer({"x": x[:, 0], "y": y}, seed=0, gaussian_block="b0,c,tau")
    assert info.value.code == "E633"
