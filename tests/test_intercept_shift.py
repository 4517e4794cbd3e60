"""The intercept shift (`ppl/infer/intercept_shift.py`): in `a + u[g[n]]` the intercept a and the
group effects u trade along a ridge that only their priors see.

- which pairs it moves: a scalar Normal and a Normal vector each read alone with coefficient 1
  by every factor but their priors; not a centred hierarchy, not a scaled intercept, not u read
  twice;
- the ridge is real: a + c, u − c leaves the likelihood's E[log f] unchanged;
- the step is the exact maximiser along it, and a second step stays put;
- the default run reaches, in a few sweeps, the fixed point that the run without it crawls to
  (VMP on a Normal likelihood; NC-VMP, Laplace and CVI on counts near e⁷).
"""

import numpy as np
import pytest

import ppl
from ppl.infer import build_problem
from ppl.infer import build as build_module
from ppl.infer.intercept_shift import shift_intercepts

from plain_sweeps import plain_sweeps
from test_factorial_hmm import MODELS

VARYING = """
data g: int[N]
data x: real[N]
data y: {kind}[N]
const G = 20
a ~ Normal(0, 1)
b ~ Normal(0, 1)
tau ~ Gamma(1, 1)
for j in 1..G {{
  u[j] ~ Normal(0, tau)
}}
for n in 1..N {{
  y[n] ~ {likelihood}
}}
"""
NORMAL = VARYING.format(kind="real", likelihood="Normal(a + u[g[n]] + b * x[n], 4.0)")
POISSON = VARYING.format(kind="int", likelihood="Poisson(exp(a + u[g[n]] + b * x[n]))")


def _data(counts: bool):
    rng = np.random.default_rng(3)
    g, x = rng.integers(20, size=600), rng.normal(size=600)
    eta = (7.0 if counts else 3.0) + rng.normal(0, 0.3, 20)[g] + 0.2 * x
    return {"g": g + 1, "x": x, "y": rng.poisson(np.exp(eta)) if counts else eta + rng.normal(0, 0.5, 600)}


def _problem(text, data):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def _moved(state, c):
    moved = state.copy()
    for name, sign in (("a", 1.0), ("u", -1.0)):
        q = state.families[name].params(state.natural[name])
        moved.set(name, state.families[name].natural(mean=q["mean"] + sign * c, precision=q["precision"]))
    return moved


def test_the_pairs_it_moves():
    data = _data(False)
    assert _problem(NORMAL, data).intercept_shifts == {"u": [("a", "u")]}
    assert _problem(NORMAL.replace("a + u[g[n]]", "2 * a + u[g[n]]"), data).intercept_shifts == {}
    assert _problem(NORMAL.replace("a + u[g[n]]", "a + u[g[n]] + u[1]"), data).intercept_shifts == {}
    assert _problem(NORMAL.replace("u[j] ~ Normal(0, tau)", "u[j] ~ Normal(a, tau)"), data).intercept_shifts == {}
    model = ppl.load(MODELS / "hierarchical_logistic.vim")  # centred: a[g] ~ Normal(mu_a, tau_a)
    dataset = model.bind(MODELS / "hierarchical_logistic.csv")
    assert build_problem(model.checked, dataset, model.analyze(dataset)).intercept_shifts == {}


def test_the_ridge_leaves_the_likelihood_unchanged():
    problem = _problem(POISSON, _data(True))
    likelihood = problem.factors[-1]
    state = plain_sweeps(problem, 3)
    for c in (-0.7, 0.01, 2.0):
        assert abs(likelihood.elbo(_moved(state, c)) - likelihood.elbo(state)) < 1e-10 * abs(likelihood.elbo(state))
    assert abs(problem.elbo(_moved(state, 0.5)) - problem.elbo(state)) > 1e-2  # the priors see it


def test_the_step_is_the_maximiser_along_the_ridge():
    problem = _problem(NORMAL, _data(False))
    state = plain_sweeps(problem, 10)  # plain coordinate ascent: still on its way along the ridge
    before = problem.elbo(state)
    shift_intercepts(problem, state, "a", "u")
    after = problem.elbo(state)
    assert after > before + 1e-3
    for c in (-1e-3, 1e-3):
        assert problem.elbo(_moved(state, c)) < after
    again = state.copy()
    shift_intercepts(problem, again, "a", "u")
    np.testing.assert_allclose(again.natural["u"], state.natural["u"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("text, counts, crawl", [(NORMAL, False, 20), (POISSON, True, 200)])
def test_the_default_reaches_the_crawling_runs_fixed_point_in_a_few_sweeps(text, counts, crawl, monkeypatch):
    """VMP with SQUAREM crawls for 22 sweeps on the Normal likelihood, NC-VMP for 235 on the counts
    (a tight run of either lands on the same ELBO to 1e-11); with the step, 7 each."""
    data = _data(counts)
    post = ppl.compile(text).infer(data, seed=0)
    monkeypatch.setattr(build_module, "intercept_pairs", lambda problem: {})
    crawled = ppl.compile(text).infer(data, seed=0)
    assert post.converged and crawled.converged
    assert post.iterations < 10 and crawled.iterations > crawl
    assert abs(post.elbo - crawled.elbo) < 1e-6
    for name in ("a", "b", "u"):  # the crawling run's own stop leaves a 0.006 sd short along the ridge
        assert np.max(np.abs(post[name].mean - crawled[name].mean) / crawled[name].sd) < 1e-2


def test_laplace_on_the_counts_converges_with_the_step():
    """Without it `laplace` ended unconverged after 500 sweeps."""
    post = ppl.compile(POISSON).infer(_data(True), seed=0, methods={"y": "laplace"})
    assert post.converged and post.iterations < 20


CROSSED = """
data g: int[N]
data h: int[N]
data y: int[N]
const G = 30
const H = 20
u ~ Normal(zeros(G), 1)
v ~ Normal(zeros(H), 1)
y ~ Poisson(exp(u[g] + v[h]))
"""


def test_crossed_effects_trade_along_their_ridge_too():
    """u[g] + v[h] with no intercept: u + c, v − c moves no margin. The pair is found, and the
    default run reaches in 8 sweeps the fixed point of a run 1e4 times tighter (48 without it)."""
    rng = np.random.default_rng(0)
    g, h = rng.integers(0, 30, 1500), rng.integers(0, 20, 1500)
    data = {"g": g + 1, "h": h + 1, "y": rng.poisson(np.exp(1.0 + rng.normal(0, 0.7, 30)[g] + rng.normal(0, 0.5, 20)[h]))}
    assert _problem(CROSSED, data).intercept_shifts == {"v": [("u", "v")]}
    model = ppl.compile(CROSSED)
    post = model.infer(data, seed=0)
    tight = model.infer(data, seed=0, tol=1e-10, mean_tol=1e-9, max_iter=2000)
    assert post.converged and post.iterations <= 10
    assert abs(post.elbo - tight.elbo) < 1e-6
    assert np.max(np.abs(post["u"].mean - tight["u"].mean) / tight["u"].sd) < 1e-4
