"""The shift step of a softmax likelihood's class weights (`ppl/infer/softmax_shift.py`):

- which variables it moves: class weights read by data alone (w of a regression, the intercepts b
  of categorical factor analysis), not loadings times a latent factor, not under stick-breaking,
  not a variable another factor reads;
- the ridge is real: one vector added to every class's weights leaves the likelihood's E[log f]
  unchanged to round-off, and the priors see it;
- the step is the exact maximiser along the ridge: the ELBO falls for a further shift in any
  direction, and a second step stays put;
- with it the default run reaches, in tens of sweeps, the fixed point that the run without it
  reaches only by crawling.
"""

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.infer import build_problem
from ppl.infer import build as build_module
from ppl.infer.factors.softmax import SoftmaxFactor
from ppl.infer.softmax_shift import shift_classes

from plain_sweeps import plain_sweeps
from test_factorial_hmm import MODELS

REGRESSION = """
data x: real[N, D] from (x0, x1, x2, x3)
data y: cat(K)[N] from y
for k in 1..K {
  w[k] ~ MvNormal(zeros(D), eye(D))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(w @ x[n]))
}
"""


@pytest.fixture(scope="module")
def data():
    """300 rows, an intercept and three covariates, three classes from known weights."""
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(300), rng.standard_normal((300, 3))])
    eta = x @ rng.standard_normal((3, 4)).T * 1.5
    p = np.exp(eta - eta.max(1, keepdims=True))
    y = (rng.random(300)[:, None] > np.cumsum(p / p.sum(1, keepdims=True), 1)).sum(1)
    return pd.DataFrame({**{f"x{j}": x[:, j] for j in range(4)}, "y": [f"c{k}" for k in y]})


def _problem(text, data, methods=None):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset, methods=methods) if methods
                         else model.analyze(dataset))


def _moved(state, c):
    """The state with every class mean of w moved by the vector c (precisions kept)."""
    moved = state.copy()
    family = state.families["w"]
    q = family.params(state.natural["w"])
    moved.set("w", family.natural(mean=q["mean"] + c, precision=q["precision"]))
    return moved


def test_the_class_weights_read_by_data_alone_are_shifted(data):
    assert _problem(REGRESSION, data).class_shifts == {"w": 0}
    fa = ppl.load(MODELS / "categorical_fa.vim")
    dataset = fa.bind(MODELS / "categorical_fa.csv")
    # b[j, c] along its class axis 1; lam[j, c] @ z[n]: a shift would change the margins' variances
    assert build_problem(fa.checked, dataset, fa.analyze(dataset)).class_shifts == {"b": 1}
    assert _problem(REGRESSION, data, {"y": "bound:stick"}).class_shifts == {}  # reads K − 1 classes
    elsewhere = REGRESSION + "v ~ MvNormal(w[1], eye(D))\n"  # a prior centred on class 1
    assert _problem(elsewhere, data).class_shifts == {}


def test_one_shift_of_every_class_leaves_the_likelihood_unchanged(data):
    problem = _problem(REGRESSION, data)
    factor = next(f for f in problem.factors if isinstance(f, SoftmaxFactor))
    state = plain_sweeps(problem, 5, 0.5)
    for c in (np.array([0.3, -1.0, 0.2, 2.0]), np.array([-0.01, 0.0, 0.05, 0.0])):
        assert abs(factor.elbo(_moved(state, c)) - factor.elbo(state)) < 1e-10 * abs(factor.elbo(state))
    assert abs(problem.elbo(_moved(state, np.full(4, 0.3))) - problem.elbo(state)) > 1e-2  # the prior sees it


def test_the_shift_step_is_the_maximiser_along_the_ridge(data):
    problem = _problem(REGRESSION, data)
    state = plain_sweeps(problem, 20, 0.5)  # half steps, no shift: the classes crawl along the ridge
    before = problem.elbo(state)
    shift_classes(problem, state, "w", 0)
    after = problem.elbo(state)
    assert after > before + 1e-3
    for c in np.random.default_rng(1).standard_normal((4, 4)) * 1e-3:
        assert problem.elbo(_moved(state, c)) < after
    again = state.copy()
    shift_classes(problem, again, "w", 0)
    np.testing.assert_allclose(again.natural["w"], state.natural["w"], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("rule", ["ncvmp", "laplace"])
def test_the_default_run_reaches_the_crawling_runs_fixed_point_in_tens_of_sweeps(data, rule, monkeypatch):
    model = ppl.compile(REGRESSION)
    shifted = model.infer(data, seed=0, methods={"y": rule})
    monkeypatch.setattr(build_module, "shift_groups", lambda problem: ())
    crawled = model.infer(data, seed=0, methods={"y": rule}, tol=1e-10, mean_tol=1e-8, max_iter=5000)
    assert shifted.converged and crawled.converged
    assert shifted.iterations < 40 < crawled.iterations
    assert abs(shifted.elbo - crawled.elbo) < 1e-6
    assert np.max(np.abs(shifted["w"].mean - crawled["w"].mean) / crawled["w"].sd) < 1e-3


def test_svi_steps_shift_the_classes_too():
    """Minibatch steps (svi over the rows of iris) take the same exact step after each global
    update: 100 passes reach the batch fixed point, where without it they ended 0.9 nats short."""
    model = ppl.load(MODELS / "multinomial_logistic.vim")
    batch = model.infer(MODELS / "multinomial_logistic.csv", seed=0)
    svi = model.infer(MODELS / "multinomial_logistic.csv", seed=0, schedule="svi(batch=50, passes=100)",
                      max_iter=2000)
    assert abs(svi.elbo - batch.elbo) < 1e-3
