"""Models a user writes for public data sets on their own scales (scikit-learn's bundled diabetes
data: age in years, blood pressure in mmHg, serum measurements in mg/dL), run with the defaults."""

from __future__ import annotations

import numpy as np
import pytest

import ppl

DIABETES = """
data X: real[N, D] from (age, sex, bmi, bp, s1, s2, s3, s4, s5, s6)
data y: real[N] from target
b0 ~ Normal(0, sd=1000)
w ~ MvNormal(zeros(D), cov=100 * eye(D))
tau ~ Gamma(1, 1)
y ~ Normal(b0 + X @ w, tau)
"""


@pytest.fixture(scope="module")
def diabetes():
    datasets = pytest.importorskip("sklearn.datasets")
    return datasets.load_diabetes(as_frame=True, scaled=False).frame


def test_an_extrapolation_the_block_cannot_step_from_is_rejected_not_an_error(diabetes):
    """Under `--gaussian-block all` the linear regression on raw covariates stopped with E502 ('no
    step along its natural gradient'): a SQUAREM point far down the ELBO, from which the searched step
    of q([b0, w, tau]) found no rise, raised instead of being rejected. It now reaches the fixed point
    of the run without extrapolation, whose intercept sd is the exact posterior's (47 with tau at its
    posterior mean; mean field's q(b0) says 2.6)."""
    model = ppl.compile(DIABETES)
    tight = {"tol": 1e-10, "mean_tol": 1e-8, "gaussian_block": "all"}
    post = model.infer(diabetes, **tight)
    plain = model.infer(diabetes, accelerate=False, **tight)
    assert post.converged and plain.converged
    assert post.elbo == pytest.approx(plain.elbo, abs=1e-6)
    for name in ("b0", "w", "tau"):
        np.testing.assert_allclose(post[name].mean, plain[name].mean, atol=1e-6 * np.max(plain[name].sd))
    X = np.c_[np.ones(len(diabetes)), diabetes.drop(columns="target").to_numpy()]
    precision = np.diag([1e-6] + [1e-2] * 10) + post["tau"].mean * X.T @ X
    assert post["b0"].sd == pytest.approx(np.sqrt(np.linalg.inv(precision)[0, 0]), rel=0.02)


CANCER = """
data X: real[N, D] from x1..xD
data y: bool[N]
b0 ~ Normal(0, sd=10)
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(b0 + X @ w))
"""


def test_a_run_that_stops_short_with_gaussians_read_together_names_the_block():
    """Logistic regression on breast_cancer's 30 raw features with an intercept of its own: mean field
    crawls along the intercept's correlation with the weights (757 sweeps to converge, 500 by default),
    and the report said only 'raise --max-iter or check the model'. A note names the variables and the
    block, which converges in 37 sweeps."""
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_breast_cancer()
    table = {"X": data.data, "y": data.target}
    model = ppl.compile(CANCER)
    post = model.infer(table)
    assert not post.converged
    assert ("`b0`, `w` are Gaussians that `y` reads together, fitted apart under mean field, which crawls when "
            "they are correlated (an intercept beside covariates far from 0, group effects beside their mean); "
            "--gaussian-block b0,w fits them as one joint Gaussian") in post.notes
    block = model.infer(table, gaussian_block="all")
    assert block.converged and block.iterations < 100 and block.elbo > post.elbo
    assert not any("--gaussian-block b0,w fits" in n for n in block.notes)


def test_the_block_hint_leaves_an_imputed_response_out():
    """With an empty cell of `y` (a Normal response, imputed), the hint named `y` among the
    Gaussians to put in the block; a block takes latents only."""
    rng = np.random.default_rng(1)
    x = rng.normal(50, 2, 40)
    y = 3 + 0.5 * x + rng.normal(0, 1, 40)
    y[0] = np.nan
    text = "data x: real[N]\ndata y: real[N]\nb0 ~ Normal(0, 1)\nb ~ Normal(0, 1)\ny ~ Normal(b0 + b * x, 1.0)\n"
    post = ppl.compile(text).infer({"x": x, "y": y}, max_iter=3)
    hint, = [n for n in post.notes if "read together" in n or "reads together" in n]
    assert hint.startswith("`b0`, `b` are Gaussians that `y` reads together") and "--gaussian-block b0,b fits" in hint
