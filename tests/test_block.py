"""Gaussian blocks: one joint Gaussian q over several Normal latent variables (`block (...)`,
`--gaussian-block all`), its messages from Normal statements and GLM likelihoods, against
exact posteriors, NUTS and mean field; and the errors E276–E279, E380–E384."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal

import ppl
from ppl.infer import ElboDecreaseWarning

from model_texts import HIERARCHY as CONJUGATE  # conjugate, so VMP is coordinate ascent

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NUTS = ROOT / "tests" / "fixtures" / "hierarchical_logistic_nuts.json"
TIGHT = {"tol": 1e-10, "mean_tol": 1e-8, "max_iter": 2000}

# y[n] = a[g[n]] + w x[n] + noise of known precision: the posterior of (mu, a, w) is Gaussian,
# so a joint Gaussian q over them is exact
KNOWN_NOISE = """
const noise = 2.0
data g: cat(G)[N]
data x: real[N]
data y: real[N]
mu ~ Normal(0, 1)
w ~ Normal(0, 1)
for k in 1..G {
  a[k] ~ Normal(mu, 4.0)
}
for n in 1..N {
  y[n] ~ Normal(a[g[n]] + w * x[n] + 0.5, noise)
}
"""



# the same with two fixed effects as one MvNormal vector, contracted with the rows of X
KNOWN_NOISE_VECTOR = """
const noise = 2.0
data g: cat(G)[N]
data X: real[N, 2] from (x, x2)
data y: real[N]
mu ~ Normal(0, 1)
w ~ MvNormal(zeros(2), eye(2))
for k in 1..G {
  a[k] ~ Normal(mu, 4.0)
}
for n in 1..N {
  y[n] ~ Normal(a[g[n]] + dot(X[n], w) + 0.5, noise)
}
block (mu, w, a)
"""


def small_data(seed=0, groups=5, rows=40):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, rows)
    g[:groups] = np.arange(groups)  # every level present
    x = rng.normal(size=rows)
    y = rng.normal(0.3, 1.0, groups)[g] + 0.8 * x + rng.normal(0, 0.7, rows)
    return {"g": np.array([f"g{k}" for k in g]), "x": x, "y": y}


def exact_posterior(data, noise=2.0, prior_a=4.0, offset=0.5, fixed=("x",)):
    """Mean, covariance and log evidence of z = (mu, w, a_1..a_G) in KNOWN_NOISE (w: one
    coefficient per column in `fixed`), densely."""
    levels = sorted(set(data["g"]))
    code = np.array([levels.index(v) for v in data["g"]])
    groups, rows, f = len(levels), len(code), 1 + len(fixed)
    dim = f + groups
    prior = np.eye(dim) * (np.arange(dim) < f)  # mu ~ N(0, 1), w ~ N(0, I), a_k − mu ~ N(0, 1/4)
    for k in range(groups):
        c = np.zeros(dim)
        c[f + k], c[0] = 1.0, -1.0
        prior += prior_a * np.outer(c, c)
    design = np.zeros((rows, dim))
    design[np.arange(rows), f + code] = 1.0
    design[:, 1:f] = np.column_stack([data[c] for c in fixed])
    precision = prior + noise * design.T @ design
    cov = np.linalg.inv(precision)
    mean = cov @ (noise * design.T @ (data["y"] - offset))
    marginal = design @ np.linalg.inv(prior) @ design.T + np.eye(rows) / noise
    evidence = multivariate_normal(offset * np.ones(rows), marginal).logpdf(data["y"])
    return mean, cov, evidence


def test_the_block_fixed_point_is_the_exact_gaussian_posterior():
    data = small_data()
    mean, cov, evidence = exact_posterior(data)
    post = ppl.compile(KNOWN_NOISE + "block (mu, w, a)\n").infer(data, seed=0, **TIGHT)
    sd = np.sqrt(np.diagonal(cov))
    np.testing.assert_allclose(post["mu"].mean, mean[0], atol=1e-8)
    np.testing.assert_allclose(post["w"].mean, mean[1], atol=1e-8)
    np.testing.assert_allclose(post["a"].mean, mean[2:], atol=1e-8)
    np.testing.assert_allclose(post["mu"].sd, sd[0], rtol=1e-8)
    np.testing.assert_allclose(post["w"].sd, sd[1], rtol=1e-8)
    np.testing.assert_allclose(post["a"].sd, sd[2:], rtol=1e-8)
    assert post.elbo == pytest.approx(evidence, abs=1e-7)  # q is the posterior: the bound is tight
    meanfield = ppl.compile(KNOWN_NOISE).infer(data, seed=0, **TIGHT)
    assert meanfield.elbo < evidence - 1e-3  # mean field is not exact here
    assert meanfield["mu"].sd < sd[0]


def test_an_mvnormal_member_read_through_a_contraction_is_exact_too():
    data = small_data(3)
    data["x2"] = np.random.default_rng(5).normal(size=len(data["y"]))
    mean, cov, evidence = exact_posterior(data, fixed=("x", "x2"))
    post = ppl.compile(KNOWN_NOISE_VECTOR).infer(pd.DataFrame(data), seed=0, **TIGHT)
    np.testing.assert_allclose(post["w"].mean, mean[1:3], atol=1e-8)
    np.testing.assert_allclose(post["w"].sd, np.sqrt(np.diagonal(cov)[1:3]), rtol=1e-8)
    np.testing.assert_allclose(post["a"].mean, mean[3:], atol=1e-8)
    np.testing.assert_allclose(post["mu"].sd, np.sqrt(cov[0, 0]), rtol=1e-8)
    assert post.elbo == pytest.approx(evidence, abs=1e-7)


def test_a_single_mvnormal_in_a_block_is_its_own_q():
    model = ppl.load(MODELS / "linear_regression_known_noise.vim")
    data = str(MODELS / "linear_regression_known_noise.csv")
    block, alone = model.infer(data, seed=0, gaussian_block="all"), model.infer(data, seed=0)
    assert block.elbo == pytest.approx(alone.elbo, abs=1e-9)
    np.testing.assert_allclose(block["w"].mean, alone["w"].mean, atol=1e-10)
    np.testing.assert_allclose(block["w"].sd, alone["w"].sd, rtol=1e-10)


def test_row_weights_in_a_block_give_the_expanded_data_answer():
    """models/surgical.csv (a row per hospital and outcome, weighted by `count`) against
    models/surgical_expanded.csv (a row per operation): the same q under a block."""
    grouped = ppl.load(MODELS / "surgical.vim").infer(str(MODELS / "surgical.csv"), seed=0,
                                                      gaussian_block="all", **TIGHT)
    expanded = ppl.load(MODELS / "surgical_expanded.vim").infer(str(MODELS / "surgical_expanded.csv"), seed=0,
                                                                gaussian_block="all", **TIGHT)
    assert grouped.elbo == pytest.approx(expanded.elbo, abs=1e-6)
    np.testing.assert_allclose(grouped["b"].mean, expanded["b"].mean, atol=1e-6)
    np.testing.assert_allclose(grouped["mu"].sd, expanded["mu"].sd, rtol=1e-6)
    meanfield = ppl.load(MODELS / "surgical.vim").infer(str(MODELS / "surgical.csv"), seed=0, **TIGHT)
    assert grouped.elbo > meanfield.elbo


def test_the_switch_and_the_statement_give_the_same_block():
    data = small_data(1)
    statement = ppl.compile(KNOWN_NOISE + "block (mu, w, a)\n").infer(data, seed=0, **TIGHT)
    switch = ppl.compile(KNOWN_NOISE).infer(data, seed=0, gaussian_block="all", **TIGHT)
    named = ppl.compile(KNOWN_NOISE).infer(data, seed=0, gaussian_block="a, mu, w", **TIGHT)
    for other in (switch, named):
        assert other.elbo == pytest.approx(statement.elbo, abs=1e-8)
        np.testing.assert_allclose(other["a"].sd, statement["a"].sd, rtol=1e-7)
    none = ppl.compile(KNOWN_NOISE + "block (mu, w, a)\n").infer(data, seed=0, gaussian_block="none", **TIGHT)
    meanfield = ppl.compile(KNOWN_NOISE).infer(data, seed=0, **TIGHT)
    assert none.elbo == pytest.approx(meanfield.elbo, abs=1e-8)


@pytest.mark.parametrize("case", ["normal members", "log members"])
def test_a_blocks_mean_change_is_its_members_and_names_one(case):
    """The stopping rule measures a block on its members (each holds its marginal under the
    block; a LogNormal member in u = log τ, the block's coordinate, and in τ): the same number as
    measuring the block's coordinates and the members, and it names a member, not the block's
    internal key (which of the two was named was left to round-off)."""
    from ppl.infer import Options, build_problem, run
    from ppl.infer.convergence import _largest_change, mean_change
    if case == "normal members":
        model, data, block = ppl.compile(CONJUGATE + "block (mu, w, a)\n"), small_data(2, groups=6, rows=50), None
    else:
        model, data, block = ppl.load(MODELS / "hierarchical_logistic.vim"), MODELS / "hierarchical_logistic.csv", "all"
    data = model.bind(data)
    problem = build_problem(model.checked, data, model.analyze(data, gaussian_block=block))
    options = dict(seed=0, tol=1e-300, mean_tol=1e-300, accelerate=False)
    before, after = (run(problem, Options(max_iter=m, **options)).state.natural for m in (1, 2))
    key = next(n for n in after if n.startswith("["))
    members = problem.families[key].members
    both = max(_largest_change(problem.families[n], (after[n], None), (before[n], None))[0] for n in [key, *members])
    change, variable = mean_change(problem, before, after)
    assert both > 1e-3 and change == pytest.approx(both, rel=1e-9)
    assert variable in members
    assert mean_change(problem, before, {key: after[key]}) == (0.0, "")  # the key alone is not measured


@pytest.mark.parametrize("accelerate", [False, None])
def test_vmp_with_a_block_never_lowers_the_elbo_and_beats_mean_field(accelerate):
    data = small_data(2, groups=6, rows=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ElboDecreaseWarning)
        post = ppl.compile(CONJUGATE + "block (mu, w, a)\n").infer(data, seed=0, accelerate=accelerate, **TIGHT)
    trace = np.asarray(post.trace)
    assert post.converged and len(trace) > 3
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    meanfield = ppl.compile(CONJUGATE).infer(data, seed=0, **TIGHT)
    assert post.elbo > meanfield.elbo + 1e-3  # the block's family contains mean field's


@pytest.fixture(scope="module")
def hierarchical():
    """(`--gaussian-block all`: the Gaussians and log τ_a, log τ_b in one q; mean field; the
    Gaussians only, q(τ) Gamma apart)."""
    model = ppl.load(MODELS / "hierarchical_logistic.vim")
    data = str(MODELS / "hierarchical_logistic.csv")
    return (model.infer(data, seed=0, gaussian_block="all", **TIGHT), model.infer(data, seed=0, **TIGHT),
            model.infer(data, seed=0, gaussian_block="mu_a,mu_b,a,b", **TIGHT))


def nuts_table(post):
    """(names, VB mean, VB sd, NUTS mean, NUTS sd) in the fixture's order."""
    reference = json.loads(NUTS.read_text(encoding="utf-8"))
    assert reference["rhat_max"] < 1.01 and reference["ess_min"] > 1000 and reference["divergences"] == 0
    names = reference["names"]
    rows = post.summary().set_index("variable")
    return (names, rows.loc[names, "mean"].to_numpy(), rows.loc[names, "sd"].to_numpy(),
            np.asarray(reference["mean"]), np.asarray(reference["sd"]))


def test_the_block_on_the_hierarchical_logistic_model_against_nuts(hierarchical):
    block, meanfield, gaussian_only = hierarchical
    assert block.converged and gaussian_only.converged
    # -154.14 against -154.25 (Gaussians only) and -154.62 (mean field): each family contains the next
    assert block.elbo > gaussian_only.elbo + 0.1 and gaussian_only.elbo > meanfield.elbo + 0.3
    names, mean, sd, nuts_mean, nuts_sd = nuts_table(block)
    assert block["tau_a"].name == "LogNormal"  # τ's sd is the log-normal's
    assert np.max(np.abs(mean - nuts_mean) / nuts_sd) <= 0.05  # every mean, within 0.05 NUTS sd (0.035)
    ratio = sd / nuts_sd
    short = np.array(names) == "mu_b"
    np.testing.assert_array_less(np.abs(ratio - 1)[~short], 0.1)  # every sd but mu_b's within 10%
    # mu_b: 0.87 of NUTS, the best any Gaussian over (mu, a, b, log τ) gives (docs/rules/block.md):
    # its posterior is a scale mixture over τ_b, and a Gaussian's conditional variance cannot follow τ_b
    assert 0.85 < ratio[short][0] < 0.9
    for other in (meanfield, gaussian_only):  # the log precisions widen τ_a, τ_b
        _, _, other_sd, _, _ = nuts_table(other)
        taus = np.array([n.startswith("tau") for n in names])
        assert np.all(np.abs(ratio - 1)[taus] < np.abs(other_sd / nuts_sd - 1)[taus] - 0.1)


@pytest.mark.parametrize("rule", ["cvi", "laplace", "bound:jaakkola", "delta"])
def test_every_glm_rule_sends_its_sites_into_the_block(hierarchical, rule):
    block = hierarchical[0]
    post = ppl.load(MODELS / "hierarchical_logistic.vim").infer(
        str(MODELS / "hierarchical_logistic.csv"), seed=0, gaussian_block="all", methods={"y": rule})
    assert post.converged
    gap = np.abs(post["mu_b"].mean - block["mu_b"].mean) / block["mu_b"].sd
    assert gap < (0.05 if rule == "cvi" else 0.3)
    if rule == "bound:jaakkola":
        assert post.elbo < block.elbo  # a strict lower bound on the same q family
    # under every rule the joint q widens the population means and raises the rule's objective
    meanfield = ppl.load(MODELS / "hierarchical_logistic.vim").infer(
        str(MODELS / "hierarchical_logistic.csv"), seed=0, methods={"y": rule})
    assert post["mu_b"].sd > 1.05 * meanfield["mu_b"].sd and post["mu_a"].sd > 1.02 * meanfield["mu_a"].sd
    assert post.elbo > meanfield.elbo + 0.1


def test_check_describes_the_block():
    out = subprocess.run([sys.executable, "-m", "ppl.cli", "check", "models/hierarchical_logistic.vim",
                          "models/hierarchical_logistic.csv", "--gaussian-block", "all"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert ("Gaussian block: mu_a, mu_b, a, b, tau_a, tau_b — one Gaussian q of dimension 16 = 4 global + 6 groups "
            "(G) × 2; arrow-shaped precision, solved in O(groups); tau_a, tau_b through their logarithms" in out.stdout)


def test_a_block_too_large_for_all_runs_mean_field_and_says_so():
    text = "const K = 1001\nfor k in 1..K {\n  w[k] ~ Normal(0, 1)\n}\ndata y: real[N]\ny ~ Normal(w[1], 1.0)\n"
    post = ppl.compile(text).infer({"y": np.array([0.5, 1.0])}, seed=0, gaussian_block="all", max_iter=5)
    assert any("too large for one block" in note and "mean field" in note for note in post.notes)
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text + "block (w)\n").infer({"y": np.array([0.5, 1.0])}, seed=0)
    assert info.value.code == "E380"


HIER = KNOWN_NOISE.replace("const noise = 2.0\n", "const noise = 2.0\ndata h: cat(H)[N]\n")


@pytest.mark.parametrize("text, code, where", [
    (KNOWN_NOISE + "block (mu, nois)\n", "E276", "`nois` is not declared"),
    (KNOWN_NOISE + "block (mu, x)\n", "E276", "is data"),
    (CONJUGATE + "p ~ Beta(1, 1)\nblock (mu, p)\n", "E277", "`p` is Beta"),
    (KNOWN_NOISE + "block (mu, a)\nblock (w, mu)\n", "E278", "`mu` is in a block already"),
    ("data y: real[N]\ntau ~ Gamma(1, 1)\nmu ~ Normal(0, 2 * tau) @joint\ny ~ Normal(mu, tau)\nblock (mu)\n",
     "E279", "structured already"),
])
def test_block_statement_errors(text, code, where):
    data = {"y": np.array([0.1, 0.2]), "g": np.array(["u", "v"]), "x": np.array([1.0, 2.0])}
    with pytest.raises(ppl.PplError) as info:
        ppl.compile(text).infer(data, max_iter=2)
    assert info.value.code == code and where in str(info.value)
    assert info.value.span is not None


@pytest.mark.parametrize("text, option, code, where", [
    ("data y: real[N]\na ~ Normal(0, 1)\nb ~ Normal(0, 1)\ny ~ Normal(a * b, 1.0)\nblock (a, b)\n", None,
     "E381", "one Normal read times data"),
    ("data y: real[N]\na ~ Normal(0, 1)\nb ~ Normal(0, 1)\ny ~ Normal(a + b, 1.0)\nschedule svi(batch=1)\n", "all",
     "E382", "batch schedule only"),
    (KNOWN_NOISE, "mu, alpha", "E383", "`alpha` is not a Normal, MvNormal or Gamma latent"),
    ("data g: cat(G)[N]\ndata h: cat(G)[N]\ndata y: bool[N]\nfor k in 1..G {\n  a[k] ~ Normal(0, 1)\n}\n"
     "for n in 1..N {\n  y[n] ~ Bernoulli(logistic(a[g[n]] - a[h[n]]))\n}\n", "all", "E384", "two different groups"),
])
def test_engine_errors_for_blocks(text, option, code, where):
    data = {"y": np.array([0.1, 0.2]), "g": np.array(["u", "v"]), "x": np.array([1.0, 2.0]),
            "h": np.array(["v", "u"])}
    if code == "E384":
        data["y"] = np.array([True, False])
    with pytest.raises(ppl.PplError) as info:
        ppl.compile(text).infer(data, max_iter=2, gaussian_block=option)
    assert info.value.code == code and where in str(info.value)


def test_a_member_whose_covariance_underflows_is_e502_at_its_statement():
    """A covariate of -1e300 under `block (w, b)`: w's variance under the block is below the
    smallest double, and handing w its marginal inverted a singular matrix (a LinAlgError
    traceback, fuzz seed 2845349); now E502 at w's statement."""
    text = ("data X: real[N, D] from x1..xD\ndata height: real[N]\nb ~ Normal(0, 1)\n"
            "w: real[D] ~ MvNormal(zeros(D), eye(D))\nheight ~ Normal(X @ w + b, 1)\nblock (w, b)\n")
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text).infer(pd.DataFrame({"height": [3.5683], "x1": [-1e300]}), seed=0)
    assert info.value.code == "E502" and "q(w)" in str(info.value) and "singular" in str(info.value)
    assert info.value.span is not None
