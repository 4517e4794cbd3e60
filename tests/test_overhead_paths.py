"""Shortcuts that cut the engine's fixed cost on small fits give the general path's numbers to the
bit, and the general path still runs where they do not apply: a scatter of a few rows, the
softmax shift's kept prior."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.infer import access, linear
from ppl.infer.build import Problem

MODELS = Path(__file__).resolve().parents[1] / "models"


def _bincounts(index, values, size):
    """`sum_by_index` the general way: one bincount per column."""
    out = np.empty((size, values.shape[1]))
    for column in range(values.shape[1]):
        out[:, column] = np.bincount(index, values[:, column], minlength=size)
    return out


@pytest.mark.parametrize("rows, columns", [(1, 30), (5, 30), (61, 30), (62, 30), (500, 30), (1, 1), (3, 2)])
def test_a_scatter_of_few_rows_adds_as_bincount_does(rows, columns):
    """Below the size where np.add.at is the cheaper (61 rows of 30 columns, 31 of 2, none of 1)
    and above it."""
    rng = np.random.default_rng(rows)
    index = rng.integers(0, 7, rows)  # repeated elements, and elements no row reads
    values = rng.standard_normal((rows, columns)) * 10.0 ** rng.integers(-8, 8, (rows, columns))
    values[rng.random(values.shape) < 0.1] = -0.0
    got, want = access.sum_by_index(index, values, 7, False), _bincounts(index, values, 7)
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


def _kept_and_afresh(model, data, monkeypatch):
    """(the run that keeps its priors' mean and precision between sweeps, the run that factors
    them each time, the variables whose priors were asked for)."""
    kept = model.infer(data, seed=0)
    made, calls = Problem.prior_gaussian, []

    def afresh(problem, state, name):
        calls.append(name)
        problem.prior_params.clear()
        return made(problem, state, name)

    monkeypatch.setattr(Problem, "prior_gaussian", afresh)
    return kept, model.infer(data, seed=0), calls


SHIFTED = {
    "constant prior": "",  # the prior's message is one array all run: factored once
    "latent prior mean": "mu ~ MvNormal(zeros(D), eye(D))\n",  # a new message every sweep
}


@pytest.mark.parametrize("case", SHIFTED)
def test_the_shift_steps_kept_prior_is_the_one_made_afresh(case, monkeypatch):
    """Iris' softmax regression, and one whose class weights share a latent prior mean: the run
    that keeps the prior's mean and precision between sweeps is the run that factors them each
    time, to the bit."""
    mean = "mu" if SHIFTED[case] else "zeros(D)"
    text = SHIFTED[case] + f"""
data x: real[N, D] from (intercept, sepal_length, sepal_width, petal_length, petal_width)
data y: cat(K)[N] from species
for k in 1..K {{
  w[k] ~ MvNormal({mean}, eye(D))
}}
for n in 1..N {{
  y[n] ~ Categorical(softmax(w @ x[n]))
}}
"""
    data = pd.read_csv(MODELS / "multinomial_logistic.csv")
    model = ppl.compile(text)
    kept, fresh, calls = _kept_and_afresh(model, data, monkeypatch)
    assert calls and kept.trace == fresh.trace
    assert np.array_equal(kept["w"].mean, fresh["w"].mean) and np.array_equal(kept["w"].sd, fresh["w"].sd)


def test_the_intercept_shifts_kept_priors_are_the_ones_made_afresh(monkeypatch):
    """`mu + a[g[n]]` with constant priors (the intercept shift's ridge): keeping the priors'
    mean and precision between sweeps gives the run that factors them each time, to the bit."""
    text = ("data g: int[N]\ndata y: real[N]\nconst G = 5\nmu ~ Normal(0, 1)\nfor k in 1..G {\n"
            "  a[k] ~ Normal(0, 2.0)\n}\nfor n in 1..N {\n  y[n] ~ Normal(mu + a[g[n]], 4.0)\n}\n")
    rng = np.random.default_rng(2)
    data = {"g": rng.integers(1, 6, 60), "y": rng.normal(3, 1, 60)}
    model = ppl.compile(text)
    kept, fresh, calls = _kept_and_afresh(model, data, monkeypatch)
    assert {"mu", "a"} <= set(calls) and kept.trace == fresh.trace
    assert np.array_equal(kept["a"].mean, fresh["a"].mean) and np.array_equal(kept["mu"].sd, fresh["mu"].sd)

WIDE = """
data X: real[N, D]
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
"""


@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola"])
def test_rows_known_by_identity_give_the_rows_found_by_address(rule, monkeypatch):
    """31 rows, 200 covariates (q held in data space): the run whose contraction hands the same
    (rows, D) view every sweep is the run that reshapes the data afresh each time (the rows then
    recognised by shape, strides and address), to the bit."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((31, 200))
    data = {"X": x, "y": (x[:, :3].sum(1) + rng.standard_normal(31) > 0).astype(int)}
    model = ppl.compile(WIDE)
    kept = model.infer(data, seed=0, methods={"y": rule})
    monkeypatch.setattr(linear.Term, "rows", property(lambda term: term.coef.reshape(-1, term.coef.shape[-1])))
    fresh = model.infer(data, seed=0, methods={"y": rule})
    assert kept.iterations == fresh.iterations and kept.trace == fresh.trace
    assert np.array_equal(kept["w"].mean, fresh["w"].mean) and np.array_equal(kept["w"].sd, fresh["w"].sd)


def test_a_terms_rows_are_one_view_of_its_coefficient_and_a_copy_is_not_kept():
    coef = np.arange(24.0).reshape(4, 1, 6)
    term = linear.Term(coef, contract=True)
    assert term.rows is term.rows and np.shares_memory(term.rows, coef) and term.rows.shape == (4, 6)
    term.coef = coef * 2.0  # a new coefficient: a new view
    assert np.array_equal(term.rows, coef.reshape(4, 6) * 2.0)
    term.coef = np.arange(48.0).reshape(2, 4, 1, 6).transpose(1, 0, 2, 3)  # its two plate axes merge by a copy
    assert term.rows is not term.rows and np.array_equal(term.rows, term.coef.reshape(8, 6))


def test_the_default_missing_tokens_are_worked_out_once_as_the_general_path_reads_them():
    """pandas' default tokens read as no finite number: the kept answer is the general path's, and a
    tuple of other tokens (or an equal copy of the defaults) still takes the general path."""
    from ppl.data.columns import NA_TOKENS, _token_numbers, token_numbers
    assert token_numbers(NA_TOKENS) == _token_numbers(NA_TOKENS) == []
    assert token_numbers(tuple(list(NA_TOKENS))) == []
    assert token_numbers(NA_TOKENS + ("-999", "1e3")) == [-999.0, 1000.0]


def test_a_finite_real_array_binds_as_the_checked_path_binds_it():
    """A real array with no NaN and no infinity binds in one pass, the same values and no mask; one
    NaN still makes a missing cell (a mask), one infinity still E406."""
    model = ppl.compile("data x: real[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\nfor n in 1..N {\n  y[n] ~ Normal(mu + x[n], 1)\n}\n")
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.5])
    bound = model.bind({"x": x, "y": y})
    assert np.array_equal(bound.arrays["y"], y) and not bound.masks
    missing = model.bind({"x": x, "y": np.array([1.0, np.nan, 3.5])})
    assert missing.masks["y"].tolist() == [True, False, True]
    with pytest.raises(ppl.DataError) as error:
        model.bind({"x": x, "y": np.array([1.0, np.inf, 3.5])})
    assert error.value.code == "E406"
