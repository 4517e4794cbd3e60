"""What a posterior says about a partially observed variable: its empty cells carry the posterior
predictive under q (mean, sd, quantiles, draws), its observed cells nothing (NaN: data, not in q).
Two defects of a user's walkthrough: `post["y"].mean` held numbers at the observed cells (the
prior's mean, not the data), and an empty Normal cell's sd was 1/√E[τ], the mean-field factor's,
not the predictive sd √(Var[μ] + E[1/τ])."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import ppl

TEXT = "data y: real[N]\nmu ~ Normal(0, 0.01)\ntau ~ Gamma(2, 1)\ny ~ Normal(mu, tau)\n"
DATA = pd.DataFrame({"y": [1.0, 2.0, np.nan, 0.5, np.nan, -0.3]})
MISSING = np.isnan(DATA["y"].to_numpy())


@pytest.fixture(scope="module")
def post():
    return ppl.compile(TEXT).infer(DATA, seed=0)


def _closed_form(post):
    """E[y] = E[μ] and Var[y] = Var[μ] + E[1/τ], E[1/τ] = b/(a − 1) for q(τ) = Gamma(a, b)."""
    tau = post["tau"].params()
    return post["mu"].mean, np.sqrt(post["mu"].sd ** 2 + tau["rate"] / (tau["shape"] - 1.0))


def test_an_empty_normal_cell_reports_the_posterior_predictive(post):
    mean, sd = _closed_form(post)
    y = post["y"]
    np.testing.assert_allclose(y.mean[MISSING], mean, rtol=1e-12)
    np.testing.assert_allclose(y.sd[MISSING], sd, rtol=1e-7)
    tau = post["tau"].params()
    upper = y.quantiles([0.975])[0][MISSING][0]  # P(y ≤ upper) = 0.975 under ∫ N(m, v + 1/τ) q(τ) dτ
    v = post["mu"].sd ** 2
    cdf = integrate.quad(lambda t: stats.norm.cdf(upper, mean, np.sqrt(v + 1 / t))
                         * stats.gamma.pdf(t, tau["shape"], scale=1 / tau["rate"]), 0, np.inf)[0]
    assert cdf == pytest.approx(0.975, abs=1e-7)
    draws = y.draws(20000, np.random.default_rng(1))
    assert draws.shape == (20000, 6)
    assert np.std(draws[:, 2]) == pytest.approx(sd, rel=0.03)
    summary = post.summary(vars="y")
    assert summary["variable"].tolist() == ["y[3]", "y[5]"]
    np.testing.assert_allclose(summary["sd"], sd, rtol=1e-7)


def test_observed_cells_are_nan_in_every_statistic(post):
    """The observed cells are data: NaN in mean, sd, quantiles and draws alike (draws already were)."""
    y = post["y"]
    for values in (y.mean, y.sd, y.quantiles([0.5])[0], y.draws(3, np.random.default_rng(0))[0],
                   post.draws(3, seed=0)["y"][0]):
        assert np.isnan(values[~MISSING]).all() and np.isfinite(values[MISSING]).all()


def test_the_predictive_of_empty_cells_saves_and_loads(post, tmp_path):
    post.save(tmp_path / "post.json")
    back = ppl.Posterior.load(tmp_path / "post.json")
    for stat in ("mean", "sd"):
        np.testing.assert_array_equal(getattr(back["y"], stat), getattr(post["y"], stat))
    np.testing.assert_array_equal(back["y"].quantiles([0.025, 0.975]), post["y"].quantiles([0.025, 0.975]))


def test_a_categorical_with_empty_cells_saves_and_loads_with_its_observed_cells_nan(tmp_path):
    """A Categorical's q is saved as the log of its summary mean: NaN at observed cells must load."""
    frame = pd.read_csv("models/categorical_fa.csv")
    post = ppl.load("models/categorical_fa.vim").infer(frame, seed=0, max_iter=5)
    mask = post["y"].observed_mask
    assert np.isnan(post["y"].mean[mask]).all() and np.isfinite(post["y"].mean[~mask]).all()
    post.save(tmp_path / "post.json")
    back = ppl.Posterior.load(tmp_path / "post.json")
    np.testing.assert_allclose(back["y"].mean[~mask], post["y"].mean[~mask], rtol=1e-12)
    assert np.isnan(back["y"].mean[mask]).all()


def test_a_grid_mixes_the_nodes_predictives_of_an_empty_cell(tmp_path):
    """Over a grid on τ the empty cell's mean and sd were the mixture of the nodes' predictives
    but its quantiles were those of the nodes' mean-field q(y), narrower. Now one mixture: its
    quantiles bracket the same law as its mean and sd."""
    text = TEXT.replace("tau ~ Gamma(2, 1)", "tau ~ Gamma(2, 1) @grid")
    post = ppl.compile(text).infer(DATA, seed=0)
    y = post["y"]
    parts = [(w, p["y"]) for w, p in post.parts]
    mean = sum(w * q.mean for w, q in parts)
    np.testing.assert_allclose(y.mean[MISSING], mean[MISSING], rtol=1e-12)
    lower, upper = y.quantiles([0.025, 0.975])[:, MISSING][:, 0]
    cdf = sum(w * q.predictive.cdf(np.array([upper])) - w * q.predictive.cdf(np.array([lower])) for w, q in parts)
    np.testing.assert_allclose(cdf, 0.95, atol=1e-9)
    assert np.isnan(y.quantiles([0.5])[0][~MISSING]).all()
    post.save(tmp_path / "grid.json")
    back = ppl.Posterior.load(tmp_path / "grid.json")
    np.testing.assert_array_equal(back["y"].quantiles([0.025, 0.975]), y.quantiles([0.025, 0.975]))


@pytest.mark.parametrize("path, text", [
    ("eight_schools", None),  # a data precision (1/σ²) per school
    (None, TEXT),  # a Gamma precision
    (None, "data z: cat(2)[N]\ndata y: real[N]\npi ~ Dirichlet(ones(2))\nfor k in 1..2 {\n  mu[k] ~ Normal(0, 0.1)\n"
           "}\ntau ~ Gamma(2, 1)\nfor n in 1..N {\n  z[n] ~ Categorical(pi)\n  y[n] ~ Normal(mu[z[n]], tau)\n}\n"),
])
def test_the_predictive_of_some_cells_is_the_predictive_of_all_cut_to_them(path, text):
    """`response_mixture(..., only)` forms a Normal response's nodes for the cells asked for only
    (a fit with 10 empty cells in 200,000 rows built its posterior 8x slower without it): the
    same components as computing every cell and taking those."""
    from ppl.infer.predict import model_of
    from ppl.infer.predict.fold import fold_in
    from ppl.infer.predict.predictive import response_mixture
    if path:
        model, frame = ppl.load(f"models/{path}.vim"), pd.read_csv(f"models/{path}.csv")
    else:
        model = ppl.compile(text)
        labels = {"z": [1, 2, 1, 2, 1, 2]} if "z" in text else {}
        frame = pd.DataFrame({"y": [1.0, 2.0, -1.5, 0.5, -0.3, 1.1]} | labels)
    post = model.infer(frame, seed=0)
    fold = fold_in(post, model_of(post, None), frame, hold_all=True)
    only = np.array([4, 1, 3])
    some = response_mixture(fold.problem, fold.state, "y", only)
    every = response_mixture(fold.problem, fold.state, "y")
    np.testing.assert_array_equal(some.weights, every.weights[only])
    for a, b in zip(some.params, every.params):
        np.testing.assert_array_equal(a, b[only])


def test_a_saved_predictive_keeps_one_number_where_a_row_or_column_repeats(post, tmp_path):
    """A global τ's nodes and weights are the same for every empty cell and a cell's mean the same
    for every node: the file holds them once (one row, one column) and loads them back equal."""
    import json
    post.save(tmp_path / "post.json")
    saved = json.loads((tmp_path / "post.json").read_text())["q"]["variables"]["y"]["predictive"]
    assert saved["weights"]["shape"] == [1, 48] and saved["params"][0]["shape"] == [1, 1]  # both cells: E[mu]
    back = ppl.Posterior.load(tmp_path / "post.json")["y"].predictive
    np.testing.assert_array_equal(back.weights, post["y"].predictive.weights)
    for a, b in zip(back.params, post["y"].predictive.params):
        np.testing.assert_array_equal(a, b)


def test_draws_output_has_columns_for_the_empty_cells_only(post):
    """`--draws-output` wrote a column of NaN for every observed cell of a partially observed y."""
    columns = post.draw_columns(4, seed=0)
    assert [c for c in columns if c.startswith("y[")] == ["y[3]", "y[5]"]
    np.testing.assert_array_equal(columns["y[3]"], post.draws(4, seed=0)["y"][:, 2])


def test_an_empty_cell_under_a_grid_mean_has_the_predictive_of_tau_alone():
    """`mu ... @grid`: in each node's fit μ is a constant, its variance the scalar 0, which the
    cells' picking broadcast to another shape than the mean's (ValueError, fuzz seed 2283042).
    Each node's predictive is ∫ N(μ_node, 1/τ) q(τ) dτ, the same for both empty cells."""
    text = TEXT.replace("mu ~ Normal(0, 0.01)", "mu ~ Normal(0, 0.01) @grid")
    post = ppl.compile(text).infer(DATA, seed=0)
    y = post["y"]
    assert np.isfinite(y.mean[MISSING]).all() and np.isnan(y.mean[~MISSING]).all()
    assert np.all(y.sd[MISSING] > 0) and y.sd[MISSING][0] == pytest.approx(y.sd[MISSING][1], rel=1e-12)
