"""A grid posterior saved, loaded, predicting, scoring and plotting (ppl.infer.grid.saved,
`Posterior.parts`, `predictive.mixed`): the round trip is exact; the grid's predictive is the
weights' mixture of its nodes' predictives, checked against each node's own and, on a conjugate
model, against the exact posterior predictive by quadrature; damaged files are E765, E800, E801."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import ppl
from ppl.cli import main
from ppl.infer.predict.predictive import Mixture, mixed

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # damping notes of the ncvmp fits

# y[n] ~ N(mu, tau): given tau, q(mu) is the exact conditional, so each node's predictive is exact given tau
NORMAL = """
data y: real[N]
tau ~ Gamma(2, 1) @grid
mu ~ Normal(0, 1)
y ~ Normal(mu, tau)
"""
HIERARCHICAL = "models/hierarchical_logistic.vim"


@pytest.fixture(scope="module")
def normal(tmp_path_factory):
    y = np.random.default_rng(1).normal(0.7, 2.0, 12)
    post = ppl.compile(NORMAL).infer({"y": y}, seed=0)
    path = tmp_path_factory.mktemp("grid") / "post.json"
    post.save(path)
    return y, post, path


@pytest.fixture(scope="module")
def hierarchical(tmp_path_factory):
    """The tutorial's grid over τ_b with the block of the rest (τ_a log-normal), 7 nodes, on 250 rows."""
    frame = pd.read_csv("models/hierarchical_logistic.csv")
    post = ppl.load(HIERARCHICAL).infer(frame.iloc[:250], seed=0, gaussian_block="all", grid="tau_b(nodes=7, sds=3)")
    path = tmp_path_factory.mktemp("grid") / "post.json"
    post.save(path)
    test = frame.iloc[250:].copy()
    test["site"] = np.where(np.arange(len(test)) < 10, "site_new", test["site"])
    return post, path, test


def _node(post, j):
    """Mean and variance of q_j(mu), and tau_j, of node j."""
    weight, part = post.parts[j]
    return float(part["mu"].mean), float(part["mu"].sd) ** 2, post.grid["nodes"][j]


def test_a_saved_grid_posterior_loads_back_exactly(normal):
    _, post, path = normal
    back = ppl.Posterior.load(path, ppl.compile(NORMAL))
    assert type(back) is type(post) and back.elbo == post.elbo and back.grid == post.grid
    pd.testing.assert_frame_equal(back.summary(), post.summary(), check_exact=True)
    for name in post.marginals:
        for stat in ("mean", "sd"):
            assert np.array_equal(getattr(back[name], stat), getattr(post[name], stat))
        assert np.array_equal(back[name].quantiles([0.1, 0.5, 0.9]), post[name].quantiles([0.1, 0.5, 0.9]))
    assert np.array_equal(back["tau"].weights, post["tau"].weights)
    assert np.array_equal(back["tau"].centres, post["tau"].centres)
    for (w, live), (v, loaded) in zip(post.parts, back.parts):
        assert w == v and loaded.elbo == live.elbo and loaded.origin == live.origin
        assert np.array_equal(loaded["mu"].natural, live["mu"].natural)


def test_a_grid_whose_nodes_list_their_variables_in_another_order_loads_back(tmp_path):
    """A grid over alpha, the prior precision of w, drawn before tau: each node lists (w, tau),
    the grid (alpha, tau, w). Loading compared the lists in order and refused the file it had
    written (E801, fuzz seed 5300228)."""
    model = ("data X: real[N, D] from x1..xD\ndata y: real[N]\nalpha ~ Gamma(1, 1) @grid\n"
             "w ~ MvNormal(zeros(D), alpha * eye(D))\ntau ~ Gamma(1, 1)\ny ~ Normal(X @ w, tau)\n")
    data = {"X": np.array([[-0.18], [-2.0], [-1.08], [-0.41], [0.56]]), "y": np.array([-0.5, -0.46, 1.19, -2.43, -1.0])}
    post = ppl.compile(model).infer(data, seed=0)
    assert list(post.marginals) != [n for n in post.nodes[0].marginals] + ["alpha"]  # the case: orders differ
    post.save(tmp_path / "grid.json")
    back = ppl.Posterior.load(tmp_path / "grid.json")
    assert back.elbo == post.elbo
    pd.testing.assert_frame_equal(back.summary(), post.summary(), check_exact=True)


def test_loaded_draws_are_the_live_ones(normal):
    _, post, path = normal
    live, loaded = post.draws(500, seed=4), ppl.Posterior.load(path).draws(500, seed=4)
    assert all(np.array_equal(live[k], loaded[k]) for k in live)


def test_the_parts_are_the_nodes_with_the_grid_weights(normal):
    _, post, _ = normal
    weights = [w for w, _ in post.parts]
    assert weights == post.grid["weights"] and sum(weights) == pytest.approx(1.0, abs=1e-12)
    for (_, part), value in zip(post.parts, post.grid["nodes"]):
        assert part.origin["constants"] == {"tau": value} and "tau" not in part.marginals
    plain = ppl.compile(NORMAL).infer({"y": np.ones(3)}, grid="none")
    assert plain.parts == [(1.0, plain)]


def test_the_grid_predictive_is_the_weighted_mixture_of_the_nodes(normal):
    """Node j predicts N(m_j, v_j + 1/τ_j) (a known precision): the grid's mean is Σ w_j m_j, its
    variance Σ w_j (v_j + 1/τ_j + m_j²) − mean², its quantiles solve the mixture's CDF."""
    _, post, _ = normal
    pred = post.predict({"y": np.full(1, np.nan)})["y"]
    w = np.array(post.grid["weights"])
    m, v, tau = (np.array(x) for x in zip(*(_node(post, j) for j in range(len(w)))))
    mean = w @ m
    sd = np.sqrt(w @ (v + 1 / tau + m ** 2) - mean ** 2)
    assert pred["mean"][0] == pytest.approx(mean, abs=1e-12)
    assert pred["sd"][0] == pytest.approx(sd, rel=1e-10)
    cdf = stats.norm.cdf(pred[["q2.5", "q97.5"]].to_numpy()[0][:, None], m, np.sqrt(v + 1 / tau)) @ w
    np.testing.assert_allclose(cdf, [0.025, 0.975], atol=1e-10)


def test_the_grid_score_is_the_log_of_the_mixed_density(normal):
    _, post, _ = normal
    y = np.array([-1.5, 0.7, 4.0])
    w = np.array(post.grid["weights"])
    m, v, tau = (np.array(x) for x in zip(*(_node(post, j) for j in range(len(w)))))
    expected = special.logsumexp(stats.norm.logpdf(y[:, None], m, np.sqrt(v + 1 / tau)) + np.log(w), axis=1)
    np.testing.assert_allclose(post.score({"y": y}).rows, expected, rtol=1e-12)


def test_the_grid_predictive_is_close_to_the_exact_posterior_predictive(normal):
    """p(y* | y) = ∫ N(y*; m(τ), 1/P(τ) + 1/τ) p(τ | y) dτ by adaptive quadrature over log τ."""
    y, post, _ = normal
    n, s1, s2 = len(y), y.sum(), (y ** 2).sum()

    def log_joint(u):
        t = np.exp(u)
        precision = 1 + n * t
        return (n / 2 * np.log(t / (2 * np.pi)) - t / 2 * s2 + (t * s1) ** 2 / (2 * precision)
                - 0.5 * np.log(precision) + stats.gamma(2).logpdf(t) + u)

    peak = log_joint(0.0)
    density = lambda u: np.exp(log_joint(u) - peak)  # noqa: E731

    def moment(k):
        def f(u):
            t = np.exp(u)
            m, var = t * s1 / (1 + n * t), 1 / (1 + n * t) + 1 / t
            return density(u) * (m if k == 1 else var + m * m)
        return integrate.quad(f, -12, 6, epsabs=0, epsrel=1e-12, limit=200)[0]

    z = integrate.quad(density, -12, 6, epsabs=0, epsrel=1e-12, limit=200)[0]
    mean = moment(1) / z
    sd = np.sqrt(moment(2) / z - mean ** 2)
    pred = post.predict({"y": np.full(1, np.nan)})["y"]
    assert abs(pred["mean"][0] - mean) < 1e-3 * sd  # the grid's error, as for the posterior of mu
    assert pred["sd"][0] / sd == pytest.approx(1.0, abs=1e-3)


def test_mixing_predictives_scales_each_parts_weights():
    a = Mixture(stats.norm, np.array([[0.5, 0.5]]), (np.array([[0.0, 1.0]]), np.array([[1.0, 2.0]])), False)
    b = Mixture(stats.norm, np.array([[1.0]]), (np.array([[3.0]]), np.array([[0.5]])), False)
    both = mixed([(0.25, a), (0.75, b)])
    mean = 0.25 * a.mean() + 0.75 * b.mean()
    assert both.mean() == pytest.approx(mean, abs=1e-12)
    second = 0.25 * (a.var() + a.mean() ** 2) + 0.75 * (b.var() + b.mean() ** 2)
    assert both.var() == pytest.approx(second - mean ** 2, abs=1e-12)
    x = np.array([0.4])
    assert np.exp(both.logpdf(x)) == pytest.approx(0.25 * np.exp(a.logpdf(x)) + 0.75 * np.exp(b.logpdf(x)))
    assert mixed([(1.0, a)]) is a


def test_a_grid_over_tau_b_predicts_as_its_nodes_mixed(hierarchical):
    """Each part predicts with the model given its τ_b (its own `predict` with that model): the
    grid's P(y = 1) is Σ w_j P_j(y = 1), a new site's q(b) the mixture of the parts'."""
    post, _, test = hierarchical
    new = test.assign(y=np.nan)
    pred = post.predict(new)
    models = post.part_models(ppl.load(HIERARCHICAL))
    each = [part.predict(new, model=model) for (_, part), model in zip(post.parts, models)]
    w = np.array([w for w, _ in post.parts])
    p = sum(wj * e["y"]["mean"].to_numpy() for wj, e in zip(w, each))
    np.testing.assert_allclose(pred["y"]["mean"], p, atol=1e-12)
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(p * (1 - p)), atol=1e-10)
    g = pred.group_labels.index("site_new")
    assert pred["b"].mean[g] == pytest.approx(sum(wj * e["b"].mean[g] for wj, e in zip(w, each)), abs=1e-12)
    assert pred["b"].name == "Normal mix" and pred.table()["variable"].str.startswith("b[site_new").any()


def test_a_loaded_grid_posterior_predicts_and_scores_as_the_live_one(hierarchical):
    post, path, test = hierarchical
    back = ppl.Posterior.load(path, HIERARCHICAL)
    new = test.assign(y=np.nan)
    pd.testing.assert_frame_equal(back.predict(new).table(), post.predict(new).table(), check_exact=True)
    assert back.score(test).total == post.score(test).total


def test_cli_predict_score_and_plot_take_a_saved_grid_posterior(hierarchical, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    post, path, test = hierarchical
    test.assign(y=np.nan).to_csv(tmp_path / "new.csv", index=False)
    test.to_csv(tmp_path / "held.csv", index=False)
    assert main(["predict", HIERARCHICAL, str(path), str(tmp_path / "new.csv"), "-o", str(tmp_path / "pred.csv")]) == 0
    table = pd.read_csv(tmp_path / "pred.csv")
    rows = table[table["kind"] == "predictive"]
    np.testing.assert_allclose(rows["mean"], post.predict(test.assign(y=np.nan))["y"]["mean"], rtol=1e-9)
    assert main(["score", HIERARCHICAL, str(path), str(tmp_path / "held.csv")]) == 0
    assert f"{post.score(test).total:.4f}"[:-1] in capsys.readouterr().out
    assert main(["plot", str(path), "-o", str(tmp_path / "grid.png")]) == 0
    assert (tmp_path / "grid.png").stat().st_size > 0


def test_plot_draws_the_grid_marginals(normal):
    pytest.importorskip("matplotlib")
    _, post, _ = normal
    fig = post.plot(kind="marginals")
    assert [ax.get_title() for ax in fig.subfigs[0].axes] == ["tau", "mu"]


def _damaged(path, tmp_path, change):
    doc = json.loads(path.read_text())
    change(doc)
    out = tmp_path / "damaged.json"
    out.write_text(json.dumps(doc))
    with pytest.raises(ppl.PplError) as error:
        ppl.Posterior.load(out)
    return error.value


def test_an_old_grid_file_is_refused_saying_why(normal, tmp_path):
    _, _, path = normal
    error = _damaged(path, tmp_path, lambda doc: doc.update(format="ppl-grid-posterior/1"))
    assert error.code == "E765" and "older" in error.message and "ppl-grid-posterior/2" in error.hint


def _part(j):
    """The q entry of `mu` in part j of a grid document."""
    return lambda doc: doc["q"]["parts"][j]["q"]["variables"]["mu"]


@pytest.mark.parametrize("change, where", [
    (lambda doc: _part(2)(doc).pop("natural"), "`q.parts[2].q.variables.mu` has no `natural`"),
    (lambda doc: _part(0)(doc)["natural"].update(data=["x", 1]), "`q.parts[0].q.variables.mu`"),
    (lambda doc: _part(1)(doc)["family"].update({"class": "os"}), "`q.parts[1].q.variables.mu`"),
    (lambda doc: doc["q"]["parts"][1].pop("elbo"), "entry `q.parts[1]` has no `elbo`"),
    (lambda doc: doc["grid"].pop("weights"), "`grid` has no `weights`"),
    (lambda doc: doc.update(elbo="high"), "the top level cannot be read"),
    (lambda doc: doc["grid"].update(weights=None), "entry `grid` cannot be read"),
    (lambda doc: doc["grid"].update(variable=[]), "entry `grid` cannot be read"),
    (lambda doc: doc["origin"].pop("constants"), "entry `origin` has no `constants`"),
    (lambda doc: doc.update(origin=3), "entry `origin` cannot be read"),
    (lambda doc: doc["q"].update(components={"nu": {"mu": 0}}), "entry `q` cannot be read"),
    (lambda doc: doc["q"]["parts"][0]["q"].update(components={"mu": 2}), "entry `q.parts[0].q` cannot be read"),
])
def test_an_unreadable_entry_is_a_located_error(normal, tmp_path, change, where):
    _, _, path = normal
    error = _damaged(path, tmp_path, change)
    assert error.code == "E800" and where in error.message


def test_an_unreadable_plain_posterior_is_located_and_exits_1(tmp_path):
    post = ppl.compile(NORMAL).infer({"y": np.ones(3)}, grid="none")
    post.save(tmp_path / "plain.json")
    error = _damaged(tmp_path / "plain.json", tmp_path, lambda doc: doc["q"].pop("scopes"))
    assert error.code == "E800" and "`q` has no `scopes`" in error.message
    assert main(["plot", str(tmp_path / "damaged.json"), "-o", str(tmp_path / "x.png")]) == 1


@pytest.mark.parametrize("change, what", [
    (lambda doc: doc["q"]["parts"].pop(), "and `q.parts`"),  # a part fewer than the nodes
    (lambda doc: doc["q"]["parts"][3]["q"]["variables"]["mu"].update(
        natural={"shape": [2, 2], "data": [0.0, -0.5, 0.0, -0.5]}), "`q.parts[3]` has `mu`"),
    (lambda doc: doc["q"]["order"].append("nu"), "the grid's are"),
])
def test_parts_that_disagree_are_refused(normal, tmp_path, change, what):
    _, _, path = normal
    error = _damaged(path, tmp_path, change)
    assert error.code == "E801" and what in error.message


def test_each_part_model_keeps_its_own_analyses(normal):
    """A part's model is the grid's with h a constant: what it analyses is kept with it, not in the
    grid model's cache, where a later fit of the grid model on data of the same kind would find it."""
    from ppl.graph import analyze
    _, post, _ = normal
    model = ppl.compile(NORMAL)
    post.predict({"y": np.array([np.nan, 1.0])}, model=model)
    parts = post.part_models(model)
    assert all(part._analyses is not model._analyses for part in parts)
    for (masks, methods, block), kept in model._analyses.items():
        assert kept == analyze(model.checked, None, dict(methods), block)


def test_a_grid_reads_the_new_rows_once_for_all_its_parts(hierarchical, tmp_path, monkeypatch):
    """Every part binds the same new rows to its own model: the file is read once, not per node,
    and the prediction is the one from the rows given in memory."""
    from ppl.data import held_out
    post, _, test = hierarchical
    path = tmp_path / "new.csv"
    test.assign(y="").to_csv(path, index=False)
    reads = []
    read = held_out._read_csv
    monkeypatch.setattr(held_out, "_read_csv", lambda *args: reads.append(args) or read(*args))
    pred = post.predict(path)
    assert len(post.parts) > 1 and len(reads) == 1
    np.testing.assert_allclose(pred["y"]["mean"], post.predict(test.assign(y=np.nan))["y"]["mean"], atol=1e-12)


def test_natural_parameters_outside_the_family_are_a_located_error(tmp_path):
    """A Gamma entry edited to a negative rate loaded as a q with mean -0.4 (a value of the wrong
    kind, read without a word): E800 at the entry, naming the family."""
    post = ppl.compile(NORMAL).infer({"y": np.ones(3)}, grid="none")
    post.save(tmp_path / "plain.json")
    error = _damaged(tmp_path / "plain.json", tmp_path,
                     lambda doc: doc["q"]["variables"]["tau"]["natural"].update(data=[1.0, 5.0]))
    assert error.code == "E800" and "entry `q.variables.tau` cannot be read" in error.message
    assert "Gamma: natural parameters out of the parameter space" in error.message
