"""CVI's two forms and its minibatches (Khan & Lin, Algs. 1–2, eqs. 13–14).

- the site form (Alg. 1) with exact gradients and β = 1 *is* NC-VMP, sweep by sweep;
- with a fixed prior the site form and the mean-field form (Alg. 2) are one recursion in two
  bookkeepings, so their iterates agree for any step, with or without minibatches;
- where the prior moves (a VMP hierarchy above the GLM) they differ but share NC-VMP's fixed point;
- eq. 14's N/B scaling makes a minibatch message unbiased: averaged over a partition of the rows
  it is the full message, exactly; the minibatch ELBO estimate likewise;
- GP classification: each site-form step is a GP regression on the pseudo-data (ỹ, 1/τ̃), and
  the variational parameters are the 2N numbers of the sites.
"""

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.initialise import initialise
from ppl.infer.plates import rbf

from model_texts import LOGISTIC, LOGISTIC_HIERARCHY

MODELS = __import__("pathlib").Path(__file__).resolve().parents[1] / "models"
EXACT = "samples=0"


def logistic_data(n=240, d=4, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[:, 0] = 1.0
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ np.linspace(-1, 2, d)))).astype(int)
    return {"X": x, "y": y}


def infer(annotation, data, text=LOGISTIC, **options):
    trace = []
    post = ppl.compile(text + " " + annotation).infer(data, seed=0, progress=lambda i, e: trace.append(e), **options)
    return post, np.array(trace)


def problem_for(annotation, data, text=LOGISTIC):
    model = ppl.compile(text + " " + annotation)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def glm(problem):
    (factor,) = [f for f in problem.factors if isinstance(f, GLMFactor)]
    return factor


def test_site_form_with_exact_gradients_and_unit_step_is_ncvmp():
    data = logistic_data()
    ncvmp, t1 = infer("@ncvmp", data, max_iter=8, tol=1e-300, accelerate=False)  # the plain sweep
    site, t2 = infer(f"@cvi(form=site, {EXACT}, step=1, kappa=0)", data, max_iter=8, tol=1e-300)
    np.testing.assert_allclose(t2, t1, rtol=1e-12)
    np.testing.assert_allclose(site["w"].natural, ncvmp["w"].natural, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("options", ["step=0.5, kappa=0", "step=0.8, kappa=0.6", "minibatch=60, step=0.5"])
def test_site_and_mean_field_forms_agree_under_a_fixed_prior(options):
    data = logistic_data()
    site, t1 = infer(f"@cvi(form=site, {EXACT}, {options})", data, max_iter=20, tol=1e-300)
    mean_field, t2 = infer(f"@cvi(form=meanfield, {EXACT}, {options})", data, max_iter=20, tol=1e-300)
    np.testing.assert_allclose(t1, t2, rtol=1e-10)
    np.testing.assert_allclose(site["w"].natural, mean_field["w"].natural, rtol=1e-8, atol=1e-8)


def test_site_form_under_a_moving_prior_reaches_the_ncvmp_fixed_point():
    text = LOGISTIC_HIERARCHY
    rng = np.random.default_rng(3)
    g = rng.integers(0, 5, 300)
    x = rng.normal(size=300)
    y = (rng.random(300) < 1 / (1 + np.exp(-(np.linspace(-1, 1, 5)[g] + 0.7 * x)))).astype(int)
    data = {"x": x, "g": [f"g{k}" for k in g], "y": y}
    ncvmp, _ = infer("@ncvmp\n}", data, text=text, max_iter=300, tol=1e-12)
    site, t_site = infer(f"@cvi(form=site, {EXACT}, step=0.5, kappa=0)\n}}", data, text=text, max_iter=300, tol=1e-12)
    mean_field, t_mf = infer(f"@cvi({EXACT}, step=0.5, kappa=0)\n}}", data, text=text, max_iter=300, tol=1e-12)
    assert site.elbo == pytest.approx(ncvmp.elbo, abs=1e-6)
    assert mean_field.elbo == pytest.approx(ncvmp.elbo, abs=1e-6)
    for name in ("a", "b"):
        np.testing.assert_allclose(site[name].mean, ncvmp[name].mean, atol=1e-5)
    # the forms are different algorithms here: Alg. 1 keeps the hierarchy's messages exact
    assert np.max(np.abs(t_site[:5] - t_mf[:5])) > 1e-6


def test_a_minibatch_message_averaged_over_a_partition_is_the_full_message():
    data = logistic_data(n=240)
    full_problem, batch_problem = problem_for(f"@cvi({EXACT})", data), problem_for(f"@cvi({EXACT}, minibatch=60)", data)
    state = initialise(full_problem, np.random.default_rng(0))
    state.set("w", state.natural["w"] + 0.1)  # away from the prior, so the sites are not trivial
    full = glm(full_problem).message(state, "w")
    factor = glm(batch_problem)
    blocks = np.random.default_rng(2).permutation(240).reshape(4, 60)
    messages = []
    for block in blocks:
        factor._draw_batch = lambda rng, block=block: (np.sort(block), 240 / 60)
        messages.append(factor.message(state, "w"))
    np.testing.assert_allclose(np.mean(messages, axis=0), full, rtol=1e-10, atol=1e-10)
    # each block alone is a different (noisy) message
    assert np.max(np.abs(messages[0] - full)) > 1e-3

    estimates = []
    for block in blocks:
        factor._draw_batch = lambda rng, block=block: (np.sort(block), 240 / 60)
        estimates.append(factor.elbo_estimate(state))
    assert np.mean([e[0] for e in estimates]) == pytest.approx(glm(full_problem).elbo(state), rel=1e-12)
    assert all(se > 0 for _, se in estimates)


def test_minibatch_cvi_reaches_the_ncvmp_optimum_and_reports_an_exact_elbo():
    data = logistic_data(n=300)
    ncvmp, _ = infer("@ncvmp", data, tol=1e-12)
    post, trace = infer(f"@cvi({EXACT}, minibatch=50, step=0.5)", data, max_iter=1000, tol=1e-9)
    # without the N/B scaling q would see a sixth of the data: ~20 nats lower
    assert post.elbo == pytest.approx(ncvmp.elbo, abs=0.1)
    np.testing.assert_allclose(post["w"].mean, ncvmp["w"].mean, atol=0.1)
    assert len(post.trace_se) == len(trace) and min(post.trace_se) > 0
    assert any("estimates of the ELBO" in note for note in post.notes)
    exact = ppl.compile(LOGISTIC).infer(data, seed=0, max_iter=1)  # a different q: a different value
    assert post.elbo != trace[-1] and post.elbo != exact.elbo


@pytest.mark.parametrize("option, message", [("form=bogus", "`meanfield`"), ("minibatch=1", "from 2 to"),
                                             ("minibatch=1000", "from 2 to"), ("minibatch=2.5", "from 2 to")])
def test_bad_form_and_minibatch_options_are_located_errors(option, message):
    with pytest.raises(ppl.PplError, match=message):
        ppl.compile(LOGISTIC + f" @cvi({option})").infer(logistic_data(n=40), seed=0)


def test_each_site_form_step_on_a_gp_is_a_gp_regression_on_the_pseudo_data():
    table = pd.read_csv(MODELS / "gp_classification.csv")
    text = (MODELS / "gp_classification.vim").read_text().replace(
        "Bernoulli(logistic(f[n]))", f"Bernoulli(logistic(f[n])) @cvi(form=site, {EXACT}, step=0.5, kappa=0)")
    model = ppl.compile(text)
    dataset = model.bind(MODELS / "gp_classification.csv")
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    result = run(problem, Options(seed=0, max_iter=3, tol=1e-300))
    factor = glm(problem)
    assert factor._sites.size == 2 * len(table)  # O(N) variational parameters: (τ̃ỹ, τ̃) per point
    h, tau = (a.reshape(-1) for a in factor._sites)  # the sites q was last computed from
    target = h / tau

    kernel = rbf(table["x"].to_numpy(), 1.0, 1.0)
    kernel = kernel + 1e-6 * np.mean(np.diag(kernel)) * np.eye(len(table))  # ppl's jitter (see gaussian.py)
    gram = kernel + np.diag(1 / tau)
    mean = kernel @ np.linalg.solve(gram, target)
    cov = kernel - kernel @ np.linalg.solve(gram, kernel)
    q_mean, q_cov = problem.families["f"].mean_cov(result.state.natural["f"])
    np.testing.assert_allclose(q_mean.reshape(-1), mean, atol=1e-6)
    np.testing.assert_allclose(q_cov.reshape(cov.shape), cov, atol=1e-6)


def test_each_restart_starts_the_site_form_afresh():
    data = logistic_data()
    one, _ = infer(f"@cvi(form=site, {EXACT}, step=0.5, kappa=0)", data, max_iter=6, tol=1e-300)
    three, _ = infer(f"@cvi(form=site, {EXACT}, step=0.5, kappa=0)", data, max_iter=6, tol=1e-300, restarts=3)
    # every restart runs the same deterministic recursion from its own start: none inherits sites
    assert three.elbo == pytest.approx(one.elbo, abs=1e-6)
