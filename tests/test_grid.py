"""A q that is a mixture over a grid of one hyperparameter (ppl.infer.grid): the identity and
the inequality of the weights' ELBO, the grid on a conjugate model against its exact posterior
by quadrature (ELBO → log evidence, the mean's marginal mean, sd and quantiles), the mixture's
quantiles against its CDF, joint draws, the hierarchical logistic regression against NUTS, the
outputs (report, CSV, JSON, netCDF), and the errors E760–E764 (saving, loading and predicting:
tests/test_grid_saved.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, special, stats

import ppl
from ppl.cli import main
from ppl.infer.grid.mixture import mixture_elbo

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NUTS = ROOT / "tests" / "fixtures" / "hierarchical_logistic_nuts.json"

# y[n] ~ N(mu, tau): given tau, q(mu) from VMP is the exact conditional and its ELBO log p(y | tau)
NORMAL = """
data y: real[N]
tau ~ Gamma(2, 1) @grid
mu ~ Normal(0, 1)
y ~ Normal(mu, tau)
"""


def test_the_weights_elbo_is_log_sum_exp_and_beats_every_node():
    rng = np.random.default_rng(0)
    scores = rng.normal(-50.0, 3.0, 17)
    total, weights = mixture_elbo(scores)
    entropy = -np.sum(weights * np.log(weights))
    assert total == pytest.approx(np.sum(weights * scores) + entropy, abs=1e-10)  # Σ w c + H(w)
    assert total >= scores.max()  # above every single node's ELBO
    for _ in range(20):  # and above any other weights' value: w ∝ e^c maximises Σ w c + H(w)
        other = rng.dirichlet(np.ones(17))
        assert np.sum(other * scores) - np.sum(other * np.log(other)) <= total + 1e-12


@pytest.mark.parametrize("prior, log_scale, reference", [
    ("Gamma(2.5, 1.5)", True, lambda z: stats.gamma(2.5, scale=1 / 1.5).logpdf(np.exp(z)) + z),  # + Jacobian
    ("Normal(0.5, sd=2.0)", False, lambda z: stats.norm(0.5, 2.0).logpdf(z)),
    ("Normal(0.5, var=4.0)", False, lambda z: stats.norm(0.5, 2.0).logpdf(z)),
])
def test_the_grid_coordinates_prior_density_is_the_statements(prior, log_scale, reference):
    from ppl.infer.grid.spec import conditional, parse_option
    from ppl.infer.plates import Environment
    text = f"data y: real[N]\nh ~ {prior}\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1.0)\n"
    model = ppl.compile(text)
    given = conditional(model.checked, parse_option("h"))
    z = np.array([-1.0, 0.3, 2.0])
    environment = Environment(given.checked({}, 1.0), model.bind({"y": np.zeros(2)}))
    assert given.log_scale == log_scale
    assert np.allclose(given.log_prior(environment, z), reference(z), rtol=1e-12)


@pytest.fixture(scope="module")
def normal():
    y = np.random.default_rng(1).normal(0.7, 2.0, 12)
    return y, ppl.compile(NORMAL).infer({"y": y}, seed=0)


def _exact(y):
    """The exact posterior, by 400-point Gauss–Legendre over log tau in [−12, 6] (the integrand is
    below 1e-30 of its peak at both ends): log evidence, and the mean, sd and CDF of mu."""
    n, s1, s2 = len(y), y.sum(), (y ** 2).sum()
    x, weights = np.polynomial.legendre.leggauss(400)
    u = 3.0 + 9.0 * x  # log tau
    t = np.exp(u)
    precision = 1 + n * t  # mu | tau, y ~ N(m, 1/P)
    m = t * s1 / precision
    log_joint = (n / 2 * np.log(t / (2 * np.pi)) - t / 2 * s2 + (t * s1) ** 2 / (2 * precision)
                 - 0.5 * np.log(precision) + stats.gamma(2).logpdf(t) + u)  # + u: the Jacobian of tau = e^u
    log_evidence = special.logsumexp(log_joint, b=9.0 * weights)
    post = 9.0 * weights * np.exp(log_joint - log_evidence)  # p(u | y) du at the points
    mean = post @ m
    sd = np.sqrt(post @ (1 / precision + m ** 2) - mean ** 2)
    cdf = lambda value: post @ special.ndtr((value - m) * np.sqrt(precision))  # noqa: E731
    return log_evidence, mean, sd, cdf


def test_the_grid_on_a_conjugate_model_matches_the_exact_posterior(normal):
    y, post = normal
    log_evidence, mean, sd, cdf = _exact(y)
    # q_j is exact given tau_j; with q_j held over its cell the grid's ELBO is a bound on log p(y)
    assert log_evidence - 0.01 < post.elbo <= log_evidence  # measured: 0.007 below
    assert abs(post["mu"].mean - mean) / sd < 1e-3  # measured: 2.8e-4
    assert post["mu"].sd / sd == pytest.approx(1.0, abs=1e-3)  # measured: 1 + 3.7e-4
    for level, q in zip((0.025, 0.975), post["mu"].quantiles([0.025, 0.975])):
        assert q == pytest.approx(optimize.brentq(lambda x: cdf(x) - level, -10, 10), abs=3e-3 * sd)  # 1e-3
    assert post.elbo >= max(post.grid["scores"])  # above every single node's
    assert post.elbo == pytest.approx(special.logsumexp(post.grid["scores"]), abs=1e-12)
    assert post["tau"].name == "grid" and post["mu"].name == "Normal mix"


def test_the_gap_to_the_evidence_shrinks_as_the_cells_narrow(normal):
    """With q_j held over its cell, the gap is the cell's spread of the optimal q(mu | tau), O(δ²):
    twice the nodes over the same span, a quarter of the gap."""
    y, coarse = normal
    log_evidence = _exact(y)[0]
    fine = ppl.compile(NORMAL.replace("@grid", "@grid(nodes=41)")).infer({"y": y}, seed=0)
    assert fine.grid["width"] == pytest.approx(coarse.grid["width"] / 2, rel=1e-12)
    assert log_evidence - fine.elbo < 0.3 * (log_evidence - coarse.elbo)


def test_mixture_quantiles_solve_its_cdf_and_the_grid_cells_are_exact(normal):
    _, post = normal
    mu, tau = post["mu"], post["tau"]
    levels = np.array([0.001, 0.1, 0.5, 0.9, 0.999])
    assert np.allclose(mu.cdf(mu.quantiles(levels)), levels, atol=1e-12, rtol=0)
    # tau is uniform in log tau on each cell: its CDF at a node's cell edge is the weights below
    grid = post.grid
    edges = np.exp(np.log(grid["nodes"]) + grid["width"] / 2)
    assert np.allclose(tau.quantiles(np.cumsum(grid["weights"])[:-1]), edges[:-1], rtol=1e-12)
    lo, hi = np.log(grid["nodes"]) - grid["width"] / 2, np.log(grid["nodes"]) + grid["width"] / 2
    assert tau.mean == pytest.approx(np.dot(grid["weights"], (np.exp(hi) - np.exp(lo)) / grid["width"]), rel=1e-12)


def test_joint_draws_keep_the_dependence_on_the_grid_variable(normal):
    _, post = normal
    draws = post.draws(20000, seed=3)
    assert draws["mu"].mean() == pytest.approx(post["mu"].mean, abs=5 * post["mu"].sd / np.sqrt(20000))
    assert draws["tau"].mean() == pytest.approx(post["tau"].mean, abs=5 * post["tau"].sd / np.sqrt(20000))
    # given a small tau, mu | tau is wide and pulled to the prior: draws carry that dependence
    low, high = draws["tau"] < np.quantile(draws["tau"], 0.25), draws["tau"] > np.quantile(draws["tau"], 0.75)
    assert draws["mu"][low].std() > 1.2 * draws["mu"][high].std()


def _against_nuts(post):
    reference = json.loads(NUTS.read_text(encoding="utf-8"))
    rows = post.summary().set_index("variable").loc[reference["names"]]
    sd = np.asarray(reference["sd"])
    return (rows["mean"].to_numpy() - reference["mean"]) / sd, rows["sd"].to_numpy() / sd


def test_the_grid_over_tau_b_with_the_block_matches_nuts():
    model = ppl.load(MODELS / "hierarchical_logistic.vim")
    data = MODELS / "hierarchical_logistic.csv"
    post = model.infer(data, seed=0, gaussian_block="all", grid="tau_b")
    z, ratio = _against_nuts(post)
    assert np.max(np.abs(z)) < 0.1  # measured: 0.03
    assert np.all(np.abs(ratio - 1) < 0.1)  # every sd within 10% of NUTS's; mu_b 0.976 (the block alone: 0.867)
    block = model.infer(data, seed=0, gaussian_block="all")
    assert post.elbo > block.elbo > model.infer(data, seed=0).elbo  # measured −154.016 > −154.140 > −154.623
    assert post.grid["ordinary_elbo"] == pytest.approx(block.elbo, abs=1e-9)


def test_the_cli_writes_the_report_csv_json_and_netcdf(tmp_path, capsys):
    model, data = str(MODELS / "hierarchical_logistic.vim"), str(MODELS / "hierarchical_logistic.csv")
    assert main(["infer", model, data, "--seed", "0", "--grid", "tau_b(nodes=15, sds=3)",
                 "--output", str(tmp_path / "post.json")]) == 0
    out = capsys.readouterr().out
    assert "note: grid over `tau_b`" in out and "Normal mix" in out
    doc = json.loads((tmp_path / "post.json").read_text())
    assert doc["format"] == "ppl-grid-posterior/2" and doc["grid"]["variable"] == "tau_b"
    assert doc["elbo"] == pytest.approx(special.logsumexp(doc["grid"]["scores"]), abs=1e-9)
    assert doc["variables"]["tau_b"]["family"] == "grid"
    assert main(["infer", model, data, "--seed", "0", "--grid", "tau_b(nodes=7, sds=3)", "--quiet",
                 "--output", str(tmp_path / "post.csv")]) == 0
    lines = [line for line in (tmp_path / "post.csv").read_text().splitlines() if line.startswith("mu_b,")]
    mean, sd, low, median, high = map(float, lines[0].split(",")[1:6])
    assert low < median < high and sd > 0
    pytest.importorskip("arviz")
    assert main(["infer", model, data, "--seed", "0", "--grid", "tau_b(nodes=15, sds=3)", "--quiet",
                 "--output", str(tmp_path / "post.nc"), "--draws", "500"]) == 0
    import arviz
    tau = arviz.from_netcdf(tmp_path / "post.nc").posterior["tau_b"].values
    assert tau.shape == (1, 500) and tau.min() >= min(doc["grid"]["nodes"]) * np.exp(-doc["grid"]["width"])


@pytest.mark.parametrize("text, option, code", [
    (NORMAL, "sigma", "E760"),  # not a variable
    (NORMAL.replace("mu ~", "mu ~ Normal(0, 1) @grid\nnu ~"), None, "E760"),  # two @grid
    (NORMAL.replace("tau ~ Gamma(2, 1) @grid", "tau ~ Gamma(2, 1)\nfor k in 1..2 {\n  v[k] ~ Normal(0, 1)\n}"),
     "v", "E761"),  # an array
    (NORMAL.replace("tau ~ Gamma(2, 1) @grid", "tau ~ Gamma(2, 1)\np ~ Beta(1, 1)"), "p", "E761"),  # a Beta
    (NORMAL.replace("tau ~ Gamma(2, 1) @grid", "s ~ Gamma(1, 1)\ntau ~ Gamma(2, s) @grid"), None, "E762"),
    (NORMAL.replace("@grid", "@grid(nodes=1)"), None, "E764"),
    (NORMAL, "tau(nodes=21, width=3)", "E764"),
    (NORMAL, "tau(", "E764"),
])
def test_grid_errors(text, option, code):
    with pytest.raises(ppl.PplError) as error:
        ppl.compile(text).infer({"y": np.array([0.5, 1.0, 2.0])}, grid=option)
    assert error.value.code == code
    if code in ("E761", "E762") or option is None:
        assert error.value.span is not None  # located in the model


def test_a_mixture_without_exact_quantiles_or_a_stochastic_run_is_refused():
    joint = ("data y: real[N]\ns ~ Gamma(2, 1) @grid\nlam ~ Gamma(1, 1)\nmu ~ Normal(0, lam) @joint\n"
             "y ~ Normal(mu, lam)\n")
    with pytest.raises(ppl.PplError) as error:
        ppl.compile(joint).infer({"y": np.array([0.5, 1.0, 2.0])})
    assert error.value.code == "E763" and error.value.span is not None
    with pytest.raises(ppl.PplError) as error:
        ppl.compile(NORMAL).infer({"y": np.array([0.5, 1.0, 2.0])}, schedule="svi(batch=1)")
    assert error.value.code == "E763"
    with pytest.raises(ppl.PplError) as error:
        ppl.compile(NORMAL).infer(MODELS / "gaussian.csv", stream=True)
    assert error.value.code == "E763" and "--stream" in error.value.message


def test_grid_none_overrides_the_annotation():
    post = ppl.compile(NORMAL).infer({"y": np.array([0.5, 1.0, 2.0])}, grid="none")
    assert post["tau"].name == "Gamma" and not hasattr(post, "grid")


def test_an_interrupted_grid_keeps_the_nodes_fitted_so_far(normal):
    y, whole = normal
    calls = []

    def progress(sweep, elbo):
        calls.append(sweep)
        if len(calls) == 12:  # during the first nodes (the ordinary run takes a few sweeps)
            raise KeyboardInterrupt

    post = ppl.compile(NORMAL).infer({"y": y}, seed=0, progress=progress)
    assert post.interrupted and post.status == "interrupted, not converged"
    assert 1 <= len(post.grid["nodes"]) < len(whole.grid["nodes"])
