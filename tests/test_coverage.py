"""The under-coverage note of a converged mean-field run (ppl.infer.coverage): each Gaussian's sd
under mean field against a joint Gaussian q's at the same fixed point, r = 1/√(J_ii (J⁻¹)_ii), checked
against closed forms (a linear regression and a grouped model with known noise precision, the
hierarchical logistic model from its mean-field sites) and by the note it gives or not."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer import block as block_module
from ppl.infer.coverage import THRESHOLD, candidate_sets, coverage, ratios
from ppl.infer.factors.glm import GLMFactor

from test_block import KNOWN_NOISE, exact_posterior, small_data

MODELS = Path(__file__).resolve().parents[1] / "models"

REGRESSION = """
const noise = 4.0
data X: real[N, D] from (x1, x2, x3)
data y: real[N]
b0 ~ Normal(0, sd=10)
w ~ MvNormal(zeros(D), eye(D))
y ~ Normal(b0 + X @ w, noise)
"""


def regression_data(centre, seed=0, rows=60):
    """X with columns centred at `centre` (raw covariates far from 0, or standardised at 0)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3)) * [1.0, 2.0, 0.5] + centre
    y = 3.0 + x @ [0.5, -1.0, 2.0] + rng.normal(0, 0.5, rows)
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "y": y})


def regression_precision(data):
    """J of (b0, w) in REGRESSION: the priors' precision plus noise · ZᵀZ, Z = [1, X]."""
    z = np.column_stack([np.ones(len(data)), data[["x1", "x2", "x3"]].to_numpy()])
    return np.diag([0.01, 1.0, 1.0, 1.0]) + 4.0 * z.T @ z


def fitted(text, data, **options):
    """(problem, run) of a mean-field fit to a tight tolerance."""
    model = ppl.compile(text)
    dataset = model.bind(data)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    return problem, run(problem, Options(**{"seed": 0, "tol": 1e-12, "mean_tol": 1e-10, "max_iter": 5000,
                                            **options}))


def by_label(found) -> dict:
    """label -> (sd apart, sd joint) of every coordinate of a set."""
    return {found.label(i): (found.apart[i], found.joint[i]) for i in range(len(found.r))}


def test_the_joint_sd_is_the_exact_posterior_sd_and_mean_fields_is_one_over_root_jii():
    data = regression_data([50.0, -20.0, 10.0])
    problem, result = fitted(REGRESSION, data)
    (members, factors), = candidate_sets(problem)
    assert members == ("b0", "w")
    found = ratios(problem, result.state, members, factors)
    j = regression_precision(data)
    exact = np.sqrt(np.diagonal(np.linalg.inv(j)))
    sds = by_label(found)
    labels = ["b0", "w[1]", "w[2]", "w[3]"]
    np.testing.assert_allclose([sds[k][1] for k in labels], exact, rtol=1e-10)
    # mean field: b0 apart, 1/√J_00; w one MvNormal q, its own block of J inverted
    assert sds["b0"][0] == pytest.approx(1 / np.sqrt(j[0, 0]), rel=1e-10)
    np.testing.assert_allclose([sds[k][0] for k in labels[1:]], np.sqrt(np.diagonal(np.linalg.inv(j[1:, 1:]))),
                               rtol=1e-10)
    assert found.element == "b0" and found.worst == pytest.approx(1 / np.sqrt(j[0, 0] * np.linalg.inv(j)[0, 0]),
                                                                   rel=1e-10)


def test_raw_covariates_give_the_note_and_standardised_ones_do_not(tmp_path):
    model = ppl.compile(REGRESSION)
    raw = regression_data([50.0, -20.0, 10.0])
    post = model.infer(raw, seed=0)
    j = regression_precision(raw)
    r = 1 / np.sqrt(j[0, 0] * np.linalg.inv(j)[0, 0])
    assert post.converged and r < 0.05
    assert (f"mean field's sd of `b0` is {r:.2g} of what a joint Gaussian q over `b0, w` gives at this fixed point "
            "(they are correlated through `y`); --gaussian-block b0,w fits them jointly") in post.notes
    post.save(tmp_path / "post.json")
    saved = json.loads((tmp_path / "post.json").read_text())
    record, = saved["coverage"]
    assert record["element"] == "b0" and record["members"] == ["b0", "w"] and record["threshold"] == THRESHOLD
    assert record["worst"] == pytest.approx(r, rel=1e-6) and record["note"] in saved["notes"]
    ppl.Posterior.load(tmp_path / "post.json").save(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["coverage"] == saved["coverage"]
    assert pickle.loads(pickle.dumps(post)).coverage == post.coverage  # a Dask worker's result keeps it
    standardised = model.infer(regression_data(0.0), seed=0)
    assert standardised.converged and not standardised.coverage
    assert "coverage" not in standardised.to_json()


def test_group_effects_beside_their_mean_agree_with_a_dense_inverse():
    """The arrow-shaped J of (mu, w, a_1..a_G), solved in O(G), against the exact posterior's
    dense covariance: known noise, so mean field's precisions are J's diagonal."""
    data = small_data(seed=2, groups=6, rows=50)
    problem, result = fitted(KNOWN_NOISE, data)
    (members, factors), = candidate_sets(problem)
    found = ratios(problem, result.state, members, factors)
    assert problem.scopes["a"][0] == "local"  # the groups of the arrow, not its corner
    _, cov, _ = exact_posterior(data)
    j = np.linalg.inv(cov)
    labels = ["mu", "w"] + [f"a[g{k}]" for k in range(6)]
    sds = by_label(found)
    np.testing.assert_allclose([sds[k][1] for k in labels], np.sqrt(np.diagonal(cov)), rtol=1e-10)
    np.testing.assert_allclose([sds[k][0] for k in labels], 1 / np.sqrt(np.diagonal(j)), rtol=1e-10)


def test_the_hierarchical_logistic_ratios_are_those_of_its_mean_field_sites():
    """J = priors + Cᵀ diag(τ̃) C, τ̃ the sites the mean-field fit's own likelihood factor gives at
    its final q, C the rows' reads of (mu_a, mu_b, a, b), inverted densely."""
    problem, result = fitted((MODELS / "hierarchical_logistic.vim").read_text(),
                             str(MODELS / "hierarchical_logistic.csv"))
    (members, factors), = candidate_sets(problem)
    found = ratios(problem, result.state, members, factors)
    state, table = result.state, pd.read_csv(MODELS / "hierarchical_logistic.csv")
    levels = sorted(table["site"].unique())
    site, groups = np.searchsorted(levels, table["site"]), len(levels)
    likelihood, = [f for f in problem.factors if isinstance(f, GLMFactor)]
    tau = np.ravel(likelihood.sites(state)[1])
    dim = 2 + 2 * groups  # mu_a, mu_b, a_1..a_G, b_1..b_G
    c = np.zeros((len(table), dim))
    c[np.arange(len(table)), 2 + site] = 1.0
    c[np.arange(len(table)), 2 + groups + site] = table["x"]
    j = np.diag([1.0, 1.0] + [0.0] * (2 * groups)) + c.T @ (tau[:, None] * c)
    for mean, first, tau_name in ((0, 2, "tau_a"), (1, 2 + groups, "tau_b")):
        gamma = state.families[tau_name].params(state.natural[tau_name])
        precision = gamma["shape"] / gamma["rate"]  # E[τ]
        for g in range(groups):
            e = np.zeros(dim)
            e[first + g], e[mean] = 1.0, -1.0
            j += precision * np.outer(e, e)
    r = 1 / np.sqrt(np.diagonal(j) * np.diagonal(np.linalg.inv(j)))
    labels = ["mu_a", "mu_b"] + [f"{v}[{s}]" for v in "ab" for s in levels]
    ratio = {found.label(i): found.r[i] for i in range(dim)}
    np.testing.assert_allclose([ratio[k] for k in labels], r, rtol=1e-9)
    assert found.element == "mu_b" and THRESHOLD < found.worst < 0.9  # 0.88: no note on the tutorial's run


def test_eight_schools_notes_its_population_mean_and_a_block_run_does_not():
    model = ppl.load(MODELS / "eight_schools.vim")
    data = str(MODELS / "eight_schools.csv")
    meanfield, block = model.infer(data, seed=0), model.infer(data, seed=0, gaussian_block="mu,theta")
    note, = meanfield.coverage
    assert note["note"].startswith("mean field's sd of `mu` is 0.42 of what a joint Gaussian q over `mu, theta`")
    # the block's own fixed point (its E[τ] moves too) widens mu's sd to within 3% of what the note says
    assert block["mu"].sd == pytest.approx(meanfield["mu"].sd / note["worst"], rel=0.03)
    assert not block.coverage


def test_a_set_too_large_for_one_block_is_skipped(monkeypatch):
    problem, result = fitted(REGRESSION, regression_data([50.0, -20.0, 10.0]))
    monkeypatch.setattr(block_module, "MAX_DENSE", 3)  # b0 and w: 4 coordinates
    (members, factors), = candidate_sets(problem)
    assert ratios(problem, result.state, members, factors) is None
    assert coverage(problem, result) == []


def test_on_models_the_note_is_eight_schools_alone():
    """Every models/*.vim with a set a block could hold, by its default run: eight_schools' mu (0.42;
    the exact posterior's 1.88 against 4.54) is noted; hierarchical_logistic (0.88), surgical (0.79)
    and the factor models, whose products of latents no block runs, are not."""
    noted, checked = set(), set()
    for path in sorted(MODELS.glob("*.vim")):
        model = ppl.load(path)
        dataset = model.bind(str(path.with_suffix(".csv")))
        if not candidate_sets(build_problem(model.checked, dataset, model.analyze(dataset))):
            continue
        checked.add(path.stem)
        post = model.infer(str(path.with_suffix(".csv")), seed=0)
        if post.coverage:
            noted.add(path.stem)
    assert {"eight_schools", "hierarchical_logistic", "surgical", "surgical_expanded"} <= checked
    assert noted == {"eight_schools"}
