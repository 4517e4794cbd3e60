"""The logistic benchmark's floor stopped by ppl's own rule (benchmarks/logistic_floor.py,
`ppl_stop`) is the same algorithm as ppl's plain run: it stops after the same sweep, at the same
ELBO, having measured the same largest mean change; and so is the GP benchmark's floor built on it."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import ppl

# by path: `pytest` puts neither the repository nor benchmarks/ on sys.path (and benchmarks/lda.py
# would pass for the `lda` package)
ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("logistic_floor", ROOT / "benchmarks" / "logistic_floor.py")
floor = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(floor)

MODEL = """
data X: real[N, D] from x1..xD
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
"""


@pytest.mark.parametrize("n, d", [(31, 300), (300, 20)])  # kernel space (D > N) and dense
@pytest.mark.parametrize("rule, floor_rule", [("ncvmp", "ncvmp"), ("bound:jaakkola", "jaakkola")])
def test_floor_under_ppls_rule_stops_where_ppl_does(n, d, rule, floor_rule):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    x[:, 0] = 1.0
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ (2 * rng.normal(size=d))))).astype(float)
    post = ppl.compile(MODEL).infer({"X": x, "y": y.astype(int)}, seed=0, methods={"y": rule}, accelerate=False)
    trace, q = floor.run(x, y, floor_rule, tol=1e-6, mean_tol=1e-5)
    assert len(trace) == post.iterations
    assert trace[-1] == pytest.approx(post.elbo, rel=1e-12)
    assert q.largest_shift() == pytest.approx(post.convergence.mean_change, rel=1e-6)
    assert len(floor.run(x, y, floor_rule, tol=1e-6)[0]) < post.iterations  # the ELBO alone stops sooner


def test_the_gp_floor_under_ppls_rule_stops_where_ppl_does():
    """benchmarks/gp.py's floor (q(f) held as Λ = P₀ + diag τ̃ under the jittered RBF prior, the
    logistic floor's NC-VMP sweep) is ppl's plain run of models/gp_classification.vim: the same
    sweeps, ELBO and q."""
    spec = importlib.util.spec_from_file_location("gp_floor", ROOT / "benchmarks" / "gp.py")
    gp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gp)
    x, y = gp.make_data(60)
    post = ppl.load(ROOT / "models" / "gp_classification.vim").infer({"x": x, "y": y}, seed=0, accelerate=False)
    trace, q = floor.run(gp.kernel(x), y, "ncvmp", tol=1e-6, form=gp.GaussianProcess, mean_tol=1e-5)
    assert len(trace) == post.iterations
    assert trace[-1] == pytest.approx(post.elbo, rel=1e-10)
    np.testing.assert_allclose(q.mean, post["f"].mean, atol=1e-8)
    np.testing.assert_allclose(np.sqrt(q.var), post["f"].sd, rtol=1e-8)
