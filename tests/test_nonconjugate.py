"""The non-conjugate rules (`ncvmp`, `cvi`) against independent computations.

Each data point of a GLM factor is a Gaussian site built from g1 = E[∂ log f/∂η] and
g2 = E[∂² log f/∂η²] under its margin N(m, v); the message to a Gaussian read is the natural
gradient of E[log f] in that read's mean parameters (Khan & Lin, eqs 29–31). These tests check:

- the identities: CVI with exact gradients and β = 1 *is* NC-VMP (Khan & Lin App. G.1), and a
  conjugate factor sent through either rule is the VMP message, absorbed in one step;
- the gradients themselves: in tests/test_glm_gradients.py;
- the fixed points: NC-VMP's fixed point is the optimum of the Gaussian-q ELBO, found here by
  L-BFGS over a mean and a Cholesky factor with hand-written gradients;
- the models: breast cancer (against NUTS when tests/fixtures/breast_cancer_nuts.json exists,
  written by benchmarks/nuts_reference.py), CVI with Monte Carlo, the hierarchical logistic
  regression, Poisson regression and GP classification.

Nothing here imports NumPyro or JAX.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, gammaln, log_expit, log_ndtr, ndtr

import ppl
from ppl.infer import DampingWarning
from ppl.infer import Options, build_problem, run
from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.initialise import initialise
from ppl.infer.plates import rbf

from gaussian_optimum import adaptive_expectation, gaussian_elbo_optimum, gh_expect
from model_texts import LOGISTIC

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NUTS_FIXTURE = ROOT / "tests" / "fixtures" / "breast_cancer_nuts.json"

LINEAR = """
data X: real[N, D] from x1..xD
data y: real[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Normal(X @ w, 4.0)"""

CVI_EXACT = "@cvi(samples=0, step=1.0, kappa=0)"


# ---------------------------------------------------------------- helpers

def breast_cancer(rows=None, columns=None) -> pd.DataFrame:
    """The first `rows` rows and columns x1..x`columns` (x1 = intercept) of the breast-cancer CSV."""
    table = pd.read_csv(MODELS / "logistic_regression.csv")
    d = columns or table.shape[1] - 1
    return table[[f"x{i}" for i in range(1, d + 1)] + ["y"]].iloc[:rows].reset_index(drop=True)


def problem_for(text, data, methods=None):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset, methods))


def sweeps(problem, n, seed=0):
    """The run after exactly `n` sweeps (never stopped early)."""
    result = run(problem, Options(seed=seed, max_iter=n, tol=1e-300))
    assert len(result.trace) == n
    return result


def factor_of(problem, kind, name="y"):
    """The runtime of factor `name`, checking that it is a `kind`."""
    (factor,) = [f for f in problem.factors if f.name == name]
    assert type(factor) is kind
    return factor


def mean_cov(problem, state, name="w"):
    m, cov = problem.families[name].mean_cov(state.natural[name])
    return m.reshape(-1), cov.reshape(m.size, m.size)


def logistic_terms(y):
    """(E log f, g1, g2) of Bernoulli–logistic, written here independently of ppl."""
    y = np.asarray(y, dtype=float)

    def terms(m, v):
        yy = y[:, None]
        return (gh_expect(lambda e: yy * e + log_expit(-e), m, v),
                gh_expect(lambda e: yy - expit(e), m, v),
                gh_expect(lambda e: -expit(e) * expit(-e), m, v))
    return terms


def poisson_terms(y):
    """(E log f, g1, g2) of Poisson–exp in closed form: E[e^η] = exp(m + v/2)."""
    y = np.asarray(y, dtype=float)

    def terms(m, v):
        rate = np.exp(m + 0.5 * v)
        return y * m - rate - gammaln(y + 1), y - rate, -rate
    return terms


# ---------------------------------------------------------------- identities

def natural_gradient_message(problem, state, x, y):
    """Σ_n ∇_μ E[log f_n] for q(w) = N(m, V), computed here: with m_n = x_n·m and v_n = x_nᵀVx_n,
    eqs 30–31 give ∂/∂E[w] = Σ x_n (g1 − m_n g2) and ∂/∂E[wwᵀ] = ½ Σ g2 x_n x_nᵀ, with g1, g2 by
    adaptive quadrature (exact to ~1e-13 however wide the margin)."""
    m, cov = mean_cov(problem, state)
    margin_m, margin_v = x @ m, np.einsum("ni,ij,nj->n", x, cov, x)
    g1 = np.array([adaptive_expectation(lambda e, a=a: a - expit(e), b, c) for a, b, c in zip(y, margin_m, margin_v)])
    g2 = np.array([adaptive_expectation(lambda e: -expit(e) * expit(-e), b, c) for b, c in zip(margin_m, margin_v)])
    first = x.T @ (g1 - margin_m * g2)
    second = 0.5 * (x.T * g2) @ x
    return np.concatenate([first, second.reshape(-1)])


def test_cvi_with_exact_gradients_and_unit_step_is_ncvmp():
    """Khan & Lin App. G.1: CVI with exact gradients and β = 1 is NC-VMP — the same message at
    every state, the same trajectory; and that message is the natural gradient of E[log f]."""
    data = breast_cancer(rows=60, columns=5)
    x, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy(dtype=float)
    nc = problem_for(LOGISTIC + " @ncvmp", data)
    cvi = problem_for(LOGISTIC + " " + CVI_EXACT, data)
    f_nc, f_cvi = factor_of(nc, GLMFactor), factor_of(cvi, GLMFactor)
    assert (f_nc.rule, f_cvi.rule, f_cvi.samples) == ("ncvmp", "cvi", 0)
    assert cvi.steps == {"w": (1.0, 0.0)} and not cvi.stochastic

    states = [initialise(nc, np.random.default_rng(0))] + [sweeps(nc, k).state for k in range(1, 5)]
    for k, state in enumerate(states):
        message = f_nc.message(state, "w")
        assert message.shape == (1, 5 + 25)
        np.testing.assert_allclose(f_cvi.message(state, "w"), message, rtol=0, atol=1e-10,
                                   err_msg=f"messages differ after {k} sweeps")
        if k:  # (the first message, from the prior, has margins too wide for ppl's quadrature: see below)
            np.testing.assert_allclose(message[0], natural_gradient_message(nc, state, x, y), rtol=0, atol=1e-9,
                                       err_msg=f"not the natural gradient after {k} sweeps")

    run_nc, run_cvi = sweeps(nc, 5), sweeps(cvi, 5)
    np.testing.assert_allclose(run_cvi.trace, run_nc.trace, rtol=0, atol=1e-10)
    np.testing.assert_allclose(run_cvi.state.natural["w"], run_nc.state.natural["w"], rtol=0, atol=1e-10)
    assert run_nc.trace[-1] > run_nc.trace[0] + 0.5  # it moved: the trajectories are not trivially equal


def test_the_first_ncvmp_message_is_the_natural_gradient():
    data = breast_cancer(rows=60, columns=5)
    x, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy(dtype=float)
    problem = problem_for(LOGISTIC + " @ncvmp", data)
    state = initialise(problem, np.random.default_rng(0))
    np.testing.assert_allclose(factor_of(problem, GLMFactor).message(state, "w")[0],
                               natural_gradient_message(problem, state, x, y), rtol=0, atol=1e-9)


def test_cvi_steps_are_damped_by_beta_t_to_the_minus_kappa():
    """λ_t = (1 − ρ_t) λ_{t−1} + ρ_t (prior + message(λ_{t−1})), ρ_t = β t^−κ (Khan & Lin eq 12)."""
    data = breast_cancer(rows=60, columns=5)
    beta, kappa = 0.8, 0.6
    problem = problem_for(LOGISTIC + f" @cvi(samples=0, step={beta}, kappa={kappa})", data)
    prior, lik = factor_of(problem, GaussianFactor, "w"), factor_of(problem, GLMFactor)
    assert problem.step("w", 3) == pytest.approx(beta * 3 ** -kappa, rel=1e-15)
    state = initialise(problem, np.random.default_rng(0))
    expected = state.natural["w"].copy()
    for t in range(1, 4):
        rho = beta * t ** -kappa
        expected = (1 - rho) * expected + rho * (prior.message(state, "w") + lik.message(state, "w"))
        state.set("w", expected)
    np.testing.assert_allclose(sweeps(problem, 3).state.natural["w"], expected, rtol=0, atol=1e-10)


def linear_data(n=30, d=3, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ np.array([0.5, -1.0, 2.0])[:d] + rng.normal(size=n) * 0.5
    table = pd.DataFrame(x, columns=[f"x{i}" for i in range(1, d + 1)])
    table["y"] = y
    return table, x, y


@pytest.mark.parametrize("annotation", ["@ncvmp", CVI_EXACT])
def test_a_conjugate_factor_through_the_rules_is_vmp_and_absorbed_in_one_step(annotation):
    """Normal likelihood with known precision 4: g1 = τ(y − m), g2 = −τ, so the site is (y, τ)
    whatever q is, the message is the VMP message, and one sweep gives the exact posterior."""
    table, x, y = linear_data()
    tau, d = 4.0, x.shape[1]
    plain, rule = problem_for(LINEAR, table), problem_for(LINEAR + " " + annotation, table)
    f_plain, f_rule = factor_of(plain, GaussianFactor), factor_of(rule, GLMFactor)

    state = initialise(plain, np.random.default_rng(0))
    other = plain.families["w"].natural(mean=np.array([3.0, -2.0, 0.5]),
                                        precision=np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 0.7]]))
    for natural in (state.natural["w"], other[None, :]):
        state.set("w", natural)
        np.testing.assert_allclose(f_rule.message(state, "w"), f_plain.message(state, "w"), rtol=0, atol=1e-10)

    precision = np.eye(d) + tau * x.T @ x
    exact_mean = np.linalg.solve(precision, tau * x.T @ y)
    cov_y = x @ x.T + np.eye(len(y)) / tau  # y ~ N(0, XXᵀ + I/τ) a priori: the log evidence
    _, logdet = np.linalg.slogdet(2 * np.pi * cov_y)
    log_evidence = -0.5 * logdet - 0.5 * y @ np.linalg.solve(cov_y, y)
    for problem in (plain, rule):
        one = sweeps(problem, 1)
        m, cov = mean_cov(problem, one.state)
        np.testing.assert_allclose(m, exact_mean, rtol=0, atol=1e-10)
        np.testing.assert_allclose(np.linalg.inv(cov), precision, rtol=0, atol=1e-8)
        assert one.trace[0] == pytest.approx(log_evidence, abs=1e-9)


def test_a_conjugate_factor_under_damped_cvi_is_absorbed_geometrically():
    """Digest §4 case 3: with a constant step β the site after t sweeps is (1 − (1 − β)^t) η_lik."""
    table, x, y = linear_data()
    problem = problem_for(LINEAR + " @cvi(samples=0, step=0.5, kappa=0)", table)
    family = problem.families["w"]
    prior = family.natural(mean=np.zeros(3), precision=np.eye(3))
    lik = np.concatenate([4.0 * x.T @ y, (-0.5 * 4.0 * x.T @ x).reshape(-1)])
    np.testing.assert_allclose(sweeps(problem, 3).state.natural["w"][0], prior + (1 - 0.5 ** 3) * lik,
                               rtol=0, atol=1e-10)


# ---------------------------------------------------------------- fixed points

def test_ncvmp_fixed_point_is_the_gaussian_elbo_optimum_logistic():
    data = breast_cancer(rows=50, columns=4)
    x, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy(dtype=float)
    best, mean, cov = gaussian_elbo_optimum(x, logistic_terms(y))
    problem = problem_for(LOGISTIC, data)
    assert factor_of(problem, GLMFactor).rule == "ncvmp"  # the default rule of this edge
    result = run(problem, Options(seed=0, tol=1e-12, max_iter=2000))
    assert result.converged
    m, v = mean_cov(problem, result.state)
    assert result.trace[-1] == pytest.approx(best, abs=1e-6)
    np.testing.assert_allclose(m, mean, rtol=0, atol=1e-4)
    np.testing.assert_allclose(v, cov, rtol=0, atol=1e-4)


def test_ncvmp_fixed_point_is_the_gaussian_elbo_optimum_poisson():
    table = pd.read_csv(MODELS / "poisson_regression.csv")
    x, y = table.drop(columns="y").to_numpy(), table["y"].to_numpy(dtype=float)
    best, mean, cov = gaussian_elbo_optimum(x, poisson_terms(y))
    model = ppl.load(MODELS / "poisson_regression.vim")
    post = model.infer(MODELS / "poisson_regression.csv", seed=0, tol=1e-12, max_iter=2000)
    assert post.converged
    assert post.elbo == pytest.approx(best, abs=1e-6)
    np.testing.assert_allclose(post["w"].mean, mean, rtol=0, atol=1e-4)
    np.testing.assert_allclose(post["w"].sd, np.sqrt(np.diag(cov)), rtol=0, atol=1e-4)


def test_ncvmp_fixed_point_is_the_gaussian_elbo_optimum_binomial_and_probit():
    """The other two links of LIKELIHOODS through a model: Binomial with per-row trials, probit."""
    rng = np.random.default_rng(3)
    x = np.c_[np.ones(80), rng.normal(size=(80, 2))]
    eta = x @ np.array([0.3, 1.0, -0.7])
    trials = rng.integers(1, 8, size=80).astype(float)
    counts = rng.binomial(trials.astype(int), expit(eta)).astype(float)
    flips = (rng.random(80) < ndtr(eta)).astype(float)
    table = pd.DataFrame(x, columns=["x1", "x2", "x3"]).assign(k=trials, y=counts)
    const = gammaln(trials + 1) - gammaln(counts + 1) - gammaln(trials - counts + 1)

    def binomial_terms(m, v):
        y, k = counts[:, None], trials[:, None]
        return (gh_expect(lambda e: y * e + k * log_expit(-e), m, v) + const,
                gh_expect(lambda e: y - k * expit(e), m, v), gh_expect(lambda e: -k * expit(e) * expit(-e), m, v))

    def probit_terms(m, v):
        s = 2 * flips[:, None] - 1
        ratio = lambda e: np.exp(-0.5 * e * e - 0.5 * np.log(2 * np.pi) - log_ndtr(s * e))  # noqa: E731
        return (gh_expect(lambda e: log_ndtr(s * e), m, v), gh_expect(lambda e: s * ratio(e), m, v),
                gh_expect(lambda e: -ratio(e) * (s * e + ratio(e)), m, v))

    binomial = LOGISTIC.replace("data y: bool[N]", "data k: int[N]\ndata y: int[N]").replace(
        "Bernoulli(logistic(X @ w))", "Binomial(k, logistic(X @ w))")
    probit = LOGISTIC.replace("logistic(X @ w)", "probit(X @ w)")
    for text, data, terms in ((binomial, table, binomial_terms), (probit, table.drop(columns="k").assign(y=flips),
                                                                  probit_terms)):
        best, mean, _ = gaussian_elbo_optimum(x, terms)
        post = ppl.compile(text).infer(data, seed=0, tol=1e-12, max_iter=2000)
        assert post.converged
        assert post.elbo == pytest.approx(best, abs=1e-6)
        np.testing.assert_allclose(post["w"].mean, mean, rtol=0, atol=1e-4)


def test_ncvmp_converges_on_separable_data_under_a_vague_prior():
    """20 points separated by the sign of x2, w ~ N(0, 100 I): a weakly identified slope whose
    posterior margins are wide (v_n up to ~250). Reference: L-BFGS with adaptive quadrature."""
    rng = np.random.default_rng(0)
    x = np.c_[np.ones(20), rng.normal(size=20)]
    y = (x[:, 1] > 0).astype(float)
    table = pd.DataFrame(x, columns=["x1", "x2"]).assign(y=y)
    with pytest.warns(DampingWarning):  # undamped NC-VMP falls into a 2-cycle here
        post = ppl.compile(LOGISTIC.replace("eye(D)", "0.01 * eye(D)")).infer(table, seed=0)
    assert post.converged and post.notes

    def accurate_terms(m, v):
        def each(fn):
            return np.array([adaptive_expectation(lambda e, a=a: fn(a, e), b, c) for a, b, c in zip(y, m, v)])
        return (each(lambda a, e: a * e + log_expit(-e)), each(lambda a, e: a - expit(e)),
                each(lambda a, e: -expit(e) * expit(-e)))
    best, mean, cov = gaussian_elbo_optimum(10 * x, accurate_terms)  # w = 10 w', w' ~ N(0, I)
    assert post.elbo == pytest.approx(best, abs=1e-4)
    assert np.all(np.abs(post["w"].mean - 10 * mean) <= 0.01 * 10 * np.sqrt(np.diag(cov)))  # within 0.01 sd


# ---------------------------------------------------------------- breast cancer

@pytest.fixture(scope="module")
def breast():
    model = ppl.load(MODELS / "logistic_regression.vim")
    return model, model.infer(MODELS / "logistic_regression.csv", seed=0, tol=1e-10, max_iter=1000)


def test_breast_cancer_ncvmp_elbo(breast):
    _, post = breast
    assert post.converged
    assert post.elbo >= -56.4
    assert post["w"].mean.shape == (31,)


def test_breast_cancer_ncvmp_means_match_nuts(breast):
    if not NUTS_FIXTURE.exists():
        pytest.skip(f"{NUTS_FIXTURE.relative_to(ROOT)} is missing: run `python3 benchmarks/nuts_reference.py` "
                    "(needs numpyro) to write the NUTS reference")
    reference = json.loads(NUTS_FIXTURE.read_text(encoding="utf-8"))
    assert reference["rhat_max"] < 1.01 and reference["ess_min"] > 1000  # a reference worth comparing with
    _, post = breast
    mean, sd = post["w"].mean, post["w"].sd
    nuts_mean, nuts_sd = np.asarray(reference["mean"]), np.asarray(reference["sd"])
    assert nuts_mean.shape == mean.shape == (31,)
    gap = np.abs(mean - nuts_mean) / sd
    assert gap.max() <= 0.1, f"w[{gap.argmax() + 1}] is {gap.max():.3f} posterior sd from the NUTS mean"
    # mean-field Gaussian q on a near-Gaussian posterior: sds within 10% of NUTS's
    np.testing.assert_allclose(sd, nuts_sd, rtol=0.1)


def test_breast_cancer_cvi_monte_carlo_reaches_ncvmp(breast):
    model, ncvmp = breast
    cvi = model.infer(MODELS / "logistic_regression.csv", seed=0, methods={"y": "cvi"})
    assert cvi.converged and np.isfinite(cvi.elbo)
    assert any(t.rule == "cvi" for t in cvi.tags)
    assert abs(cvi.elbo - ncvmp.elbo) <= 0.1
    assert cvi.elbo <= ncvmp.elbo + 1e-9  # NC-VMP is at the optimum of the same bound
    gap = np.abs(cvi["w"].mean - ncvmp["w"].mean) / ncvmp["w"].sd
    assert gap.max() <= 0.1
    again = model.infer(MODELS / "logistic_regression.csv", seed=0, methods={"y": "cvi"})
    np.testing.assert_array_equal(again["w"].mean, cvi["w"].mean)  # seeded: reproducible


# ---------------------------------------------------------------- the other models

def test_hierarchical_logistic_mixes_vmp_and_ncvmp():
    out = subprocess.run([sys.executable, "-m", "ppl.cli", "check", "models/hierarchical_logistic.vim",
                          "models/hierarchical_logistic.csv", "--format", "json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    edges = {(e["factor"], e["variable"]): e["rule"] for e in json.loads(out.stdout)["factors"]}
    for factor, variables in (("a[g]", ("mu_a", "tau_a")), ("b[g]", ("mu_b", "tau_b"))):
        for variable in variables:
            assert edges[(factor, variable)] == "vmp"
    assert edges[("y[n]", "a")] == edges[("y[n]", "b")] == "ncvmp"

    model = ppl.load(MODELS / "hierarchical_logistic.vim")
    dataset = model.bind(MODELS / "hierarchical_logistic.csv")
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    result = run(problem, Options(seed=0, tol=1e-12, max_iter=2000))
    assert result.converged and np.isfinite(result.trace[-1])
    state = result.state
    # a fixed point: one more NC-VMP update of the site effects changes nothing ...
    for name in ("a", "b"):
        update = sum(f.message(state, name) for f in problem.neighbours[name])
        np.testing.assert_allclose(update, state.natural[name], rtol=1e-6, atol=1e-6)
    # ... and a stationary point of the ELBO (computed by its own path: quadrature for E[log f],
    # closed forms for the rest): central differences in every natural parameter of q vanish
    for name in problem.latent:
        natural = state.natural[name].copy()
        for index in np.ndindex(natural.shape):
            h = 1e-5 * max(1.0, abs(natural[index]))
            values = []
            for sign in (1, -1):
                moved = natural.copy()
                moved[index] += sign * h
                state.set(name, moved)
                values.append(problem.elbo(state))
            state.set(name, natural)
            assert abs(values[0] - values[1]) / (2 * h) < 1e-4, (name, index)


def test_gp_classification_fits_and_its_elbo_is_minus_kl_plus_expected_log_likelihood():
    table = pd.read_csv(MODELS / "gp_classification.csv")
    x, y = table["x"].to_numpy(), table["y"].to_numpy(dtype=float)
    model = ppl.load(MODELS / "gp_classification.vim")
    post = model.infer(MODELS / "gp_classification.csv", seed=0)
    assert post.converged
    mean, cov = post["f"].family.mean_cov(post["f"].natural)
    mean, cov = mean.reshape(-1), cov.reshape(len(x), len(x))
    assert np.mean((mean > 0) == (y > 0)) >= 0.8

    kernel = rbf(x, 1.0, 1.0)  # the model's constants lengthscale = variance = 1
    # The kernel of 40 sorted inputs on [-3, 3] is singular in float64 (condition ~1e17); like
    # GP libraries ppl adds a diagonal jitter of 1e-6 of the mean variance (more only if that is
    # not enough), and the KL is to that prior.
    for jitter in (1e-6, 1e-5, 1e-4, 1e-3):
        try:
            chol = np.linalg.cholesky(kernel + jitter * np.mean(np.diag(kernel)) * np.eye(len(x)))
            break
        except np.linalg.LinAlgError:
            continue
    solve = lambda b: np.linalg.solve(chol.T, np.linalg.solve(chol, b))  # noqa: E731
    _, logdet_cov = np.linalg.slogdet(cov)
    kl = 0.5 * (np.trace(solve(cov)) + mean @ solve(mean) - len(x) + 2 * np.sum(np.log(np.diag(chol)))
                - logdet_cov)
    expected_log_lik = np.sum(logistic_terms(y)(mean, np.diag(cov))[0])
    assert post.elbo_terms["E[log p(y[n])]"] == pytest.approx(expected_log_lik, abs=1e-9)
    # the KL works through the (jittered) kernel, condition ~1e10: a few 1e-6 of round-off
    assert post.elbo == pytest.approx(-kl + expected_log_lik, abs=1e-4)

    # NC-VMP's fixed point (Khan & Lin §4 GP example): the prior mean is 0, so the first natural
    # parameter of q(f) is the sites' τ̃ỹ = g1 − m g2, element by element, computed here from q's
    # own marginals (30 sweeps reach the round-off floor, ~3e-7, of inverting q's precision)
    settled = model.infer(MODELS / "gp_classification.csv", seed=0, tol=1e-300, max_iter=30)
    mean, cov = settled["f"].family.mean_cov(settled["f"].natural)
    mean, var = mean.reshape(-1), np.diag(cov.reshape(len(x), len(x)))
    _, g1, g2 = logistic_terms(y)(mean, var)
    np.testing.assert_allclose(settled["f"].natural.reshape(-1)[:len(x)], g1 - mean * g2, rtol=0, atol=1e-5)


def test_a_non_conjugate_normal_mean_with_a_latent_precision_is_a_located_refusal():
    text = """
data x: real[N]
data y: real[N]
tau ~ Gamma(1.0, 1.0)
a ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(exp(a * x[n]), tau)
}"""
    with pytest.raises(ppl.PplError, match="needs a known precision") as caught:
        ppl.compile(text).infer({"x": [1.0, 2.0], "y": [0.5, 1.2]}, seed=0)
    assert caught.value.span is not None and caught.value.span.line == 7


def test_cvi_on_many_rows_traces_its_draws_and_reports_the_exact_elbo():
    """20,000 rows, narrow margins: every trace entry is the draws' estimate (with a standard
    error), the run stops on them, and the reported ELBO is the exact ELBO of the returned q
    (checked by an independent Gauss–Hermite sum), within tol·|L| of NC-VMP's optimum."""
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(20_000), rng.normal(size=(20_000, 3))])
    y = (rng.random(20_000) < 1 / (1 + np.exp(-x @ np.array([0.5, 1.0, -1.0, 0.3])))).astype(int)
    data = {"X": x, "y": y}
    model = ppl.compile("data X: real[N, D] from x1..xD\ndata y: bool[N]\n"
                        "w ~ MvNormal(zeros(D), eye(D))\ny ~ Bernoulli(logistic(X @ w))\n")
    ncvmp = model.infer(data, seed=0)
    cvi = model.infer(data, seed=0, methods={"y": "cvi"})
    assert cvi.converged and all(se > 0 for se in cvi.trace_se)
    mean, cov = cvi["w"].family.mean_cov(cvi["w"].natural)
    nodes, weights = np.polynomial.hermite.hermgauss(64)
    m, v = x @ mean, np.einsum("ij,jk,ik->i", x, cov, x)
    eta = m[:, None] + np.sqrt(2 * v)[:, None] * nodes
    fit = np.sum(weights / np.sqrt(np.pi) * (y[:, None] * eta - np.logaddexp(0, eta)))
    kl = 0.5 * (np.trace(cov) + mean @ mean - 4 - np.linalg.slogdet(cov)[1])
    assert cvi.elbo == pytest.approx(fit - kl, abs=1e-6)
    assert 0 <= ncvmp.elbo - cvi.elbo <= 1e-6 * abs(ncvmp.elbo)
