"""Rows of a non-conjugate factor that repeat (ppl.infer.repeated): one integral per group of rows
with the same predictor inputs and observation gives the answers of integrating every row; rows
that do not repeat enough are integrated one by one, as before."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.infer import build_problem
from ppl.infer.factors import glm
from ppl.infer.factors.glm import GLMFactor
from ppl.infer import repeated
from ppl.infer.repeated import find_repeats

MODELS = Path(__file__).resolve().parents[1] / "models"
TIGHT = dict(seed=1, tol=1e-10, mean_tol=1e-8, accelerate=False)


def few_values():
    """A hierarchical binomial regression on a covariate with three values and trials 1..3: 400
    rows, at most 5 sites × 3 values × 3 trials × 4 outcomes of them distinct."""
    rng = np.random.default_rng(3)
    site, x, trials = rng.integers(1, 6, 400), rng.integers(-1, 2, 400), rng.integers(1, 4, 400)
    y = rng.binomial(trials, 1 / (1 + np.exp(-(0.3 * site - 1 + 0.8 * x))))
    return pd.DataFrame({"site": site, "x": x.astype(float), "trials": trials, "y": y})


CASES = {
    "surgical_expanded": (MODELS / "surgical_expanded.vim", str(MODELS / "surgical_expanded.csv")),
    "binomial on few values": ("""
data site: int[N]
data x: real[N]
data trials: int[N]
data y: int[N]
mu ~ Normal(0, 1)
tau ~ Gamma(1, 1)
b ~ Normal(0, 1)
for g in 1..5 {
  a[g] ~ Normal(mu, tau)
}
for n in 1..N {
  y[n] ~ Binomial(trials[n], logistic(a[site[n]] + b * x[n]))
}""", few_values()),
    "ordinal on few values": ("""
data x: real[N, D] from x1..x2
data rating: int[N]
w ~ MvNormal(zeros(D), eye(D))
for n in 1..N {
  rating[n] ~ OrderedLogistic(dot(x[n], w), [-1.0, 0.5])
}""", pd.DataFrame({"x1": np.tile([1.0, 0.0, -1.0], 100), "x2": np.repeat([0.5, -0.5], 150),
                    "rating": np.random.default_rng(4).integers(1, 4, 300)})),
    "one shared predictor": ("""
data y: bool[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Bernoulli(logistic(mu))
}""", pd.DataFrame({"y": np.random.default_rng(5).integers(0, 2, 100)})),  # a variance of shape (1, 1)
}


def model_of(source):
    return ppl.load(source) if isinstance(source, Path) else ppl.compile(source)


def glm_factor(model, data) -> GLMFactor:
    dataset = model.bind(data)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    (factor,) = [f for f in problem.factors if isinstance(f, GLMFactor)]
    return factor


@pytest.mark.parametrize("block", ["none", "all"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_integral_per_group_gives_the_answers_of_every_row(case, block, monkeypatch):
    """The same ELBO trace and posterior means, to rounding, as the fit that integrates every row,
    under mean field and with every Gaussian in one block (the margin then reads the block)."""
    source, data = CASES[case]
    model = model_of(source)
    found = []
    monkeypatch.setattr(glm, "find_repeats", lambda *args: found.append(find_repeats(*args)) or found[-1])
    grouped = model.infer(data, gaussian_block=block, **TIGHT)
    assert found[0] is not None and len(found[0].group) >= 2 * len(found[0].rows[0])
    monkeypatch.setattr(glm, "find_repeats", lambda *args: None)
    every_row = model.infer(data, gaussian_block=block, **TIGHT)
    assert grouped.iterations == every_row.iterations
    np.testing.assert_allclose(grouped.trace, every_row.trace, rtol=1e-13, atol=0)
    for name in every_row.marginals:
        np.testing.assert_allclose(grouped[name].mean, every_row[name].mean, rtol=1e-11, atol=1e-14)


def test_groups_are_the_distinct_inputs_and_observations():
    """surgical_expanded: one group per (hospital, died) that occurs, each row in its own."""
    table = pd.read_csv(MODELS / "surgical_expanded.csv")
    repeats = glm_factor(ppl.load(MODELS / "surgical_expanded.vim"), str(MODELS / "surgical_expanded.csv")).repeats
    pairs = table["hospital"] + table["died"].astype(str)
    assert len(repeats.rows[0]) == pairs.nunique()
    first = repeats.rows[0][repeats.group]  # each row's representative
    assert np.array_equal(pairs.to_numpy()[first], pairs.to_numpy())


@pytest.mark.parametrize("name", ["logistic_regression", "hierarchical_logistic", "surgical", "ordinal_regression"])
def test_rows_that_do_not_repeat_are_integrated_one_by_one(name):
    """Continuous covariates (or already grouped rows): more groups than half the rows, no grouping."""
    assert glm_factor(ppl.load(MODELS / f"{name}.vim"), str(MODELS / f"{name}.csv")).repeats is None


def test_one_sort_gives_up_where_the_refinement_does(monkeypatch):
    """gp_classification reads f through one-hot rows: every row is its own group. The combination
    of the inputs says so at once, and the refinement column by column says the same without it."""
    model, data = ppl.load(MODELS / "gp_classification.vim"), str(MODELS / "gp_classification.csv")
    assert glm_factor(model, data).repeats is None
    monkeypatch.setattr(repeated, "_distinct_at_least", lambda columns, bound: False)
    assert glm_factor(model, data).repeats is None


def test_the_combination_never_counts_more_groups_than_there_are():
    """Small integer rows (whose weighted sums can collide, and -0.0 beside 0.0): the distinct
    combinations are at most the distinct rows, so a quick `None` is never wrong."""
    rng = np.random.default_rng(6)
    columns = rng.integers(-2, 3, (4, 500)).astype(float)
    columns[0, columns[0] == 0] = -0.0
    distinct = len(np.unique(columns.T, axis=0))
    assert not repeated._distinct_at_least([columns], distinct)
    assert repeated._distinct_at_least([np.eye(40)], 20)


def test_the_combination_is_taken_input_by_input_without_joining_them():
    """The inputs are combined one product each (no N × D copy of `X`), however the columns are
    split into inputs: never more combinations than distinct rows, and distinct one-hot rows are
    told apart."""
    rng = np.random.default_rng(7)
    columns = rng.integers(-2, 3, (5, 300)).astype(float)
    distinct = len(np.unique(columns.T, axis=0))
    for split in ([columns[:1], columns[1:]], [columns[:2], columns[2:3], columns[3:]]):
        assert not repeated._distinct_at_least(split, distinct)
    assert repeated._distinct_at_least([np.eye(40)[:15], np.eye(40)[15:]], 39)


def test_a_likelihood_in_closed_form_is_not_grouped():
    """A Normal likelihood holds each row's precision itself, not in (y, n): rows alike in (y, n)
    and η may differ in it (here s), and a closed form costs no more than the gather anyway."""
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"g": rng.integers(1, 4, 200), "y": rng.integers(0, 3, 200).astype(float),
                         "s": rng.choice([0.5, 1.0, 2.0], 200)})
    model = ppl.compile("""
data g: int[N]
data y: real[N]
data s: real[N]
for k in 1..3 {
  a[k] ~ Normal(0, 1)
}
for n in 1..N {
  y[n] ~ Normal(a[g[n]], s[n]) @ncvmp
}""")
    assert glm_factor(model, data).repeats is None
    assert np.isfinite(model.infer(data, seed=1).elbo)
