"""A new group with no observed rows: its effects are drawn from the population under q. The
fold-in's fixed point for such a group is N(E[μ], 1/E[τ]), which leaves out the spread of q(μ)
and q(τ) (Jensen: 1/E[τ] < E[1/τ]); its predictions were pulled towards the population mean's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import ppl

MODELS = Path(__file__).resolve().parents[1] / "models"
NEW = pd.DataFrame({"site": ["site_a", "site_a", "site_new", "site_new"], "x": [-1.0, 1.0, -1.0, 1.0],
                    "y": [np.nan] * 4})


@pytest.fixture(scope="module")
def fitted():
    post = ppl.load(MODELS / "hierarchical_logistic.vim").infer(MODELS / "hierarchical_logistic.csv", seed=0)
    return post, post.predict(NEW)


def _gamma(marginal):
    """(shape, rate) of a Gamma marginal from its mean and sd."""
    return marginal.mean ** 2 / marginal.sd ** 2, marginal.mean / marginal.sd ** 2


@pytest.mark.parametrize("effect, mean, precision", [("a", "mu_a", "tau_a"), ("b", "mu_b", "tau_b")])
def test_a_new_groups_effect_has_its_priors_moments_under_q(fitted, effect, mean, precision):
    """mean E[μ], variance Var[μ] + E[1/τ] = Var[μ] + rate/(shape − 1)."""
    post, pred = fitted
    shape, rate = _gamma(post[precision])
    row = pred.table().set_index("variable").loc[f"{effect}[site_new]"]
    assert row["mean"] == pytest.approx(post[mean].mean, rel=1e-10)
    assert row["sd"] ** 2 == pytest.approx(post[mean].sd ** 2 + rate / (shape - 1), rel=1e-10)
    seen = pred.table().set_index("variable").loc[f"{effect}[site_a]"]  # a seen site keeps its q from training
    assert seen["mean"] == pytest.approx(float(post[effect].mean[0]), rel=1e-12)


def test_the_new_groups_predictive_is_near_the_exact_one_under_q(fitted):
    """P(y = 1) at x = ∓1 for the new site against Monte Carlo over q(μ) q(τ) p(a | μ, τ) (and
    b alike), 4e5 draws (standard error 4e-4): within 0.004; the fold-in's fixed point was 0.016
    off at x = −1."""
    post, pred = fitted
    rng = np.random.default_rng(1)

    def effect(mean, precision):
        shape, rate = _gamma(post[precision])
        tau = rng.gamma(shape, 1 / rate, 400_000)
        return rng.normal(rng.normal(post[mean].mean, post[mean].sd, tau.size), 1 / np.sqrt(tau))

    a, b = effect("mu_a", "tau_a"), effect("mu_b", "tau_b")
    exact = [expit(a - b).mean(), expit(a + b).mean()]
    np.testing.assert_allclose(pred["y"]["mean"].to_numpy()[2:], exact, atol=0.004)


def test_a_new_groups_vector_effect_has_its_priors_moments_under_q():
    """`u[j] ~ MvNormal(mu, Lambda)`: a new group's u has mean E[μ] and covariance
    Cov[μ] + E[Λ⁻¹] = Cov[μ] + S⁻¹/(ν − D − 1) for q(Λ) = Wishart(ν, S); a seen group keeps its q."""
    rng = np.random.default_rng(0)
    group, x = rng.integers(0, 8, 160), rng.normal(size=160)
    u = rng.multivariate_normal([1.0, -0.5], [[0.5, 0.2], [0.2, 0.3]], 8)
    data = pd.DataFrame({"site": [f"s{i}" for i in group], "one": 1.0, "x": x,
                         "y": u[group, 0] + u[group, 1] * x + rng.normal(0, 0.5, 160)})
    text = ("data site: cat(G)[N]\ndata z: real[N, 2] from (one, x)\ndata y: real[N]\n"
            "mu ~ MvNormal(zeros(2), eye(2))\nLambda ~ Wishart(5, eye(2))\ntau ~ Gamma(1, 1)\n"
            "for j in 1..G {\n  u[j] ~ MvNormal(mu, Lambda)\n}\nfor n in 1..N {\n  y[n] ~ Normal(u[site[n]] @ z[n], tau)\n}\n")
    post = ppl.compile(text).infer(data, seed=0)
    pred = post.predict(pd.DataFrame({"site": ["s0", "new"], "one": 1.0, "x": 0.0, "y": np.nan}))
    means, covs = pred["u"].family.mean_cov(pred["u"].natural)
    new, seen = pred.group_labels.index("new"), pred.group_labels.index("s0")
    mu_mean, mu_cov = post["mu"].family.mean_cov(post["mu"].natural)
    wishart = post["Lambda"].family.params(post["Lambda"].natural)
    np.testing.assert_allclose(means[new], mu_mean, rtol=1e-10)
    np.testing.assert_allclose(covs[new], mu_cov + np.linalg.inv(wishart["scale"]) / (wishart["dof"] - 3), rtol=1e-10)
    trained_means, trained_covs = post["u"].family.mean_cov(post["u"].natural)
    s0 = post.levels["site"].index("s0")
    np.testing.assert_allclose(covs[seen], trained_covs[s0], rtol=1e-12)
