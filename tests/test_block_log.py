"""A Gamma precision in a Gaussian block through u = log τ (`block (mu, a, tau)`): the closed-form
expectations and their gradients by finite differences, the block's messages as natural
gradients of each factor's term, the fixed point on a linear-Gaussian hierarchy against an
independent optimisation of the Gaussian ELBO by quadrature (and the exact posterior by
quadrature over u), and the errors E630–E633."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln, logsumexp

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer.initialise import initialise
from ppl.infer import initialise as initialise_module
from ppl.infer.tilted import tilted_mean, tilted_square

from model_texts import HIERARCHY as HIERARCHY_GAMMA
from test_factorial_hmm import MODELS

TIGHT = {"tol": 1e-12, "mean_tol": 1e-9, "max_iter": 3000}

# y[n] ~ N(a[g[n]], noise) with known noise; a[k] ~ N(mu, tau), tau ~ Gamma(2, 1)
HIERARCHY = """
const noise = 4.0
data g: cat(G)[N]
data y: real[N]
mu ~ Normal(0, 1)
tau ~ Gamma(2, 1)
for k in 1..G {
  a[k] ~ Normal(mu, tau)
}
for n in 1..N {
  y[n] ~ Normal(a[g[n]], noise)
}
block (mu, a, tau)
"""

# every kind of term: a scaled log precision, a data target with a fixed effect, two precisions
NOISY = HIERARCHY_GAMMA.replace("Normal(mu, tau)", "Normal(mu, 2.0 * tau)").replace(
    "w * x[n]", "w * x[n] + 0.3") + "block (mu, w, a, tau, noise)\n"


def tiny_data(seed=0, groups=3, rows=7):
    rng = np.random.default_rng(seed)
    code = np.r_[np.arange(groups), rng.integers(0, groups, rows - groups)]
    x = rng.normal(size=rows)
    y = rng.normal(0.0, 1.0, groups)[code] + 0.5 * x + rng.normal(0, 0.5, rows)
    return {"g": np.array([f"g{k}" for k in code]), "x": x, "y": y}, code


@pytest.mark.parametrize("seed", range(3))
def test_the_tilted_expectations_and_their_gradients(seed):
    rng = np.random.default_rng(seed)
    m_u, m_d, s_ud = rng.normal(size=3)
    s_uu, s_dd = 0.3 + rng.random(2)
    s_ud *= 0.5 * np.sqrt(s_uu * s_dd)
    value, grad = tilted_square(m_u, s_uu, m_d, s_ud, s_dd)
    # against Gauss–Hermite quadrature over (u, d) given by a Cholesky factor
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    chol = np.linalg.cholesky([[s_uu, s_ud], [s_ud, s_dd]])
    e1, e2 = np.meshgrid(nodes, nodes, indexing="ij")
    u = m_u + chol[0, 0] * e1
    d = m_d + chol[1, 0] * e1 + chol[1, 1] * e2
    quadrature = np.sum(np.outer(weights, weights) * np.exp(u) * d ** 2) / (2 * np.pi)
    assert value == pytest.approx(quadrature, rel=1e-10)
    args = dict(m_u=m_u, s_uu=s_uu, m_d=m_d, s_ud=s_ud, s_dd=s_dd)
    for name in args:
        h = 1e-6
        up, down = dict(args), dict(args)
        up[name] += h
        down[name] -= h
        numeric = (tilted_square(**up)[0] - tilted_square(**down)[0]) / (2 * h)
        assert grad[name] == pytest.approx(numeric, rel=1e-7, abs=1e-9), name
    mean, mean_grad = tilted_mean(m_u, s_uu)
    assert mean == pytest.approx(np.exp(m_u + s_uu / 2), rel=1e-14)
    assert mean_grad["m_u"] == pytest.approx((tilted_mean(m_u + 1e-6, s_uu)[0] - tilted_mean(m_u - 1e-6, s_uu)[0]) / 2e-6)
    assert mean_grad["s_uu"] == pytest.approx((tilted_mean(m_u, s_uu + 1e-6)[0] - tilted_mean(m_u, s_uu - 1e-6)[0]) / 2e-6)


def _problem(text, data):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def _random_block(layout, rng):
    """A valid arrow-shaped natural parameter: random mean, precision I·2 + a small arrow perturbation."""
    c, g, l = layout.corner, layout.groups, layout.local
    a = 2 * np.eye(c) + 0.2 * _sym(rng.normal(size=(c, c)))
    d = np.array([2 * np.eye(l) + 0.2 * _sym(rng.normal(size=(l, l))) for _ in range(g)])
    b = 0.2 * rng.normal(size=(g, l, c))
    return layout.pack(rng.normal(size=c), rng.normal(size=(g, l)), a, d, b)


def _sym(m):
    return (m + m.T) / 2


def _quadratic(layout, message, natural):
    """E_q[hᵀz − ½ zᵀJz] for the message (h, J) under q = the block at `natural`."""
    h, j = layout.dense(message)
    h_q, j_q = layout.dense(natural)
    cov = np.linalg.inv(j_q)
    mean = cov @ h_q
    return h @ mean - 0.5 * np.trace(j @ (cov + np.outer(mean, mean)))


@pytest.mark.parametrize("text", [HIERARCHY, NOISY], ids=["hierarchy", "noise-and-scale"])
def test_every_message_is_the_natural_gradient_of_its_term(text):
    """For each factor f reading the block, m_f = ∇_μ E_q[log f]: along any direction δ of the
    natural parameter, d/dε E_q[log f] equals d/dε E_q[h_fᵀz − ½zᵀJ_f z] with m_f held fixed
    (central differences)."""
    data, _ = tiny_data(1)
    problem = _problem(text, data)
    key = problem.searched[0]
    family = problem.families[key]
    rng = np.random.default_rng(4)
    state = initialise(problem, rng)
    natural = _random_block(family.layout, rng)[None, :]
    kinds = set()
    for factor in problem.neighbours[key]:
        kinds.add(type(factor).__name__)
        state.set(key, natural)
        message = factor.message(state, key)
        for _ in range(3):
            delta = _random_block(family.layout, rng)[None, :] - natural
            h = 1e-5
            values = []
            for sign in (1, -1):
                state.set(key, natural + sign * h * delta)
                values.append((factor.elbo(state), _quadratic(family.layout, message, natural + sign * h * delta)))
            (f_up, q_up), (f_down, q_down) = values
            assert (f_up - f_down) / (2 * h) == pytest.approx((q_up - q_down) / (2 * h), rel=1e-6, abs=1e-7)
    assert {"BlockLogGamma", "BlockLogNormal"} <= kinds


def _gaussian_elbo(mean, cov, code, y, noise=4.0, a0=2.0, b0=1.0, nodes=60):
    """The ELBO of q(mu, a, u) = N(mean, cov) in HIERARCHY, coordinates (mu, a_1..a_G, u),
    computed independently of ppl.infer.tilted: E[e^u (a_k − mu)²] = E_u[e^u E[(a_k − mu)² | u]]
    by Gauss–Hermite over u."""
    groups = mean.size - 2
    u, weights = np.polynomial.hermite_e.hermegauss(nodes)
    weights = weights / np.sqrt(2 * np.pi)
    m_u, s_uu = mean[-1], cov[-1, -1]
    uu = m_u + np.sqrt(s_uu) * u
    total = -0.5 * np.log(2 * np.pi) - 0.5 * (mean[0] ** 2 + cov[0, 0])  # mu ~ N(0, 1)
    total += a0 * np.log(b0) - gammaln(a0) + a0 * m_u - b0 * np.sum(weights * np.exp(uu))
    for k in range(groups):
        c = np.zeros(mean.size)
        c[1 + k], c[0] = 1.0, -1.0
        m_d, s_dd, s_ud = c @ mean, c @ cov @ c, c @ cov[:, -1]
        cond_mean = m_d + s_ud / s_uu * (uu - m_u)
        cond_var = s_dd - s_ud ** 2 / s_uu
        total += 0.5 * m_u - 0.5 * np.log(2 * np.pi) - 0.5 * np.sum(weights * np.exp(uu) * (cond_mean ** 2 + cond_var))
    r1 = y - mean[1 + code]
    r2 = r1 ** 2 + cov[1 + code, 1 + code]
    total += np.sum(0.5 * np.log(noise) - 0.5 * np.log(2 * np.pi) - 0.5 * noise * r2)
    return total + 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1]


def _log_evidence_and_mean_tau(code, y, noise=4.0, a0=2.0, b0=1.0):
    """log p(y) and E[τ | y] by quadrature over u = log τ: given τ, (mu, a) and y are Gaussian."""
    groups, rows = code.max() + 1, y.size
    u = np.linspace(-12, 8, 8001)
    logs = []
    for value in u:
        tau = np.exp(value)
        cov_a = np.ones((groups, groups)) + np.eye(groups) / tau  # a = mu + e, mu ~ N(0, 1)
        design = np.zeros((rows, groups))
        design[np.arange(rows), code] = 1.0
        cov_y = design @ cov_a @ design.T + np.eye(rows) / noise
        sign, logdet = np.linalg.slogdet(cov_y)
        loglik = -0.5 * (rows * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(cov_y, y))
        logs.append(loglik + a0 * np.log(b0) - gammaln(a0) + a0 * value - b0 * tau)  # Jacobian included
    logs = np.asarray(logs)
    step = u[1] - u[0]
    evidence = logsumexp(logs) + np.log(step)
    return evidence, np.exp(logsumexp(logs + u) + np.log(step) - evidence)


def _block_q(text, data):
    """(ELBO, mean, cov) of the block at ppl's fixed point, coordinates as laid out: corner (mu, u) then a."""
    problem = _problem(text, data)
    result = run(problem, Options(seed=0, **TIGHT))
    key = problem.searched[0]
    h, j = problem.families[key].layout.dense(result.state.natural[key])
    cov = np.linalg.inv(j)
    return result, cov @ h, cov


def test_the_fixed_point_is_the_optimal_gaussian_and_close_to_the_exact_posterior():
    data, code = tiny_data(2)
    result, mean, cov = _block_q(HIERARCHY, data)
    assert result.converged
    trace = np.asarray(result.trace)
    assert np.all(np.diff(trace) >= -1e-12 * np.abs(trace[1:]))  # the searched Newton steps never lower it
    order = np.r_[0, np.arange(2, mean.size), 1]  # ppl's (mu, u, a...) → (mu, a..., u)
    mean, cov = mean[order], cov[np.ix_(order, order)]
    y = data["y"]
    # the independent ELBO at ppl's q is ppl's ELBO
    assert _gaussian_elbo(mean, cov, code, y) == pytest.approx(result.elbo, abs=1e-9)
    # and no Gaussian does better: BFGS over (mean, Cholesky factor) from ppl's q and from the prior
    n = mean.size
    rows, cols = np.tril_indices(n)

    def negative(theta):
        chol = np.zeros((n, n))
        chol[rows, cols] = theta[n:]
        chol[np.diag_indices(n)] = np.exp(np.diag(chol))
        return -_gaussian_elbo(theta[:n], chol @ chol.T, code, y)

    def start(m, c):
        chol = np.linalg.cholesky(c)
        chol[np.diag_indices(n)] = np.log(np.diag(chol))
        return np.r_[m, chol[rows, cols]]

    for theta in (start(mean, cov), start(np.zeros(n), np.eye(n))):
        best = minimize(negative, theta, method="BFGS", options={"gtol": 1e-9, "maxiter": 5000})
        assert -best.fun <= result.elbo + 1e-7
        assert -best.fun == pytest.approx(result.elbo, abs=1e-6)
        np.testing.assert_allclose(best.x[:n], mean, atol=2e-4)
    # against the exact posterior (quadrature over u): a bound, 0.1 nats short here, and E[τ] within 5%
    evidence, mean_tau = _log_evidence_and_mean_tau(code, y)
    assert evidence - 0.1 < result.elbo < evidence
    assert np.exp(mean[-1] + cov[-1, -1] / 2) == pytest.approx(mean_tau, rel=0.05)
    # with q(τ) a Gamma apart from the block the bound is lower
    apart = ppl.compile(HIERARCHY.replace("block (mu, a, tau)", "block (mu, a)")).infer(data, seed=0, **TIGHT)
    assert apart.elbo < result.elbo - 1e-3


def test_the_report_gives_the_log_normal_marginal_of_tau(tmp_path):
    data, _ = tiny_data(2)
    result, mean, cov = _block_q(HIERARCHY, data)
    post = ppl.compile(HIERARCHY).infer(data, seed=0, **TIGHT)
    m_u, s_uu = mean[1], cov[1, 1]  # corner: (mu, u)
    assert post["tau"].name == "LogNormal"
    assert post["tau"].mean == pytest.approx(np.exp(m_u + s_uu / 2), rel=1e-6)
    assert post["tau"].sd == pytest.approx(np.exp(m_u + s_uu / 2) * np.sqrt(np.expm1(s_uu)), rel=1e-6)
    assert post["mu"].sd == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-6)
    median = post["tau"].quantiles([0.5])
    assert float(np.ravel(median)[0]) == pytest.approx(np.exp(m_u), rel=1e-6)
    draws = post["tau"].draws(20000, np.random.default_rng(0))
    assert np.all(draws > 0) and np.mean(np.log(draws)) == pytest.approx(m_u, abs=4 * np.sqrt(s_uu / 20000))
    post.save(tmp_path / "post.json")  # a saved posterior keeps the log-normal q
    loaded = ppl.Posterior.load(tmp_path / "post.json")
    assert loaded["tau"].name == "LogNormal" and loaded["tau"].sd == pytest.approx(post["tau"].sd, rel=1e-12)


def test_all_takes_the_gamma_precisions_that_qualify():
    data, _ = tiny_data(3)
    text = NOISY.replace("block (mu, w, a, tau, noise)\n", "")
    switch = ppl.compile(text).infer(data, seed=0, gaussian_block="all", **TIGHT)
    statement = ppl.compile(NOISY).infer(data, seed=0, **TIGHT)
    assert switch.elbo == pytest.approx(statement.elbo, abs=1e-8)
    assert switch["noise"].name == "LogNormal" and switch["tau"].name == "LogNormal"
    named = ppl.compile(text).infer(data, seed=0, gaussian_block="mu,w,a", **TIGHT)
    assert named["tau"].name == "Gamma" and named.elbo < switch.elbo
    # a Gamma read otherwise stays out of `all`, with its Gamma q
    other = text + "data c: int[N]\nfor n in 1..N {\n  c[n] ~ Poisson(tau)\n}\n"
    data_c = dict(data, c=np.arange(len(data["y"])) % 3)
    post = ppl.compile(other).infer(data_c, seed=0, gaussian_block="all", max_iter=50)
    assert post["tau"].name == "Gamma" and post["noise"].name == "LogNormal"


@pytest.mark.parametrize("text, code, where", [
    ("data y: real[N]\nmu ~ Normal(0, 1)\nfor k in 1..2 {\n  t[k] ~ Gamma(1, 1)\n}\n"
     "y ~ Normal(mu, t[1])\nblock (mu, t)\n", "E630", "`t` is a Gamma array"),
    ("data y: real[N]\ndata c: int[N]\nmu ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(mu, t)\nc ~ Poisson(t)\n"
     "block (mu, t)\n", "E631", "other than as the precision"),
    ("data y: real[N]\nmu ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(t, 2.0)\nblock (mu, t)\n",
     "E631", "other than as the precision"),
    ("data y: real[N]\nmu ~ Normal(0, 1)\nr ~ Gamma(1, 1)\nt ~ Gamma(1, r)\ny ~ Normal(mu, t)\nblock (mu, t)\n",
     "E632", "reads latent `r`"),
    ("data y: real[N]\nmu ~ Normal(0, 1)\nv ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(mu + v, t)\nblock (mu, t)\n",
     "E633", "`v`, which is outside the block"),
])
def test_gamma_member_errors(text, code, where):
    data = {"y": np.array([0.1, 0.2]), "c": np.array([1, 2])}
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text).infer(data, max_iter=2)
    assert info.value.code == code and where in str(info.value)
    assert info.value.span is not None


def test_a_missing_value_under_a_log_precision_is_refused():
    data = {"y": np.array([0.1, np.nan, 0.3])}
    text = "data y: real[N]\nmu ~ Normal(0, 1)\nt ~ Gamma(1, 1)\nfor n in 1..N {\n  y[n] ~ Normal(mu, t)\n}\nblock (mu, t)\n"
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text).infer(data, max_iter=2)
    assert info.value.code == "E633" and "`y`" in str(info.value)


def test_the_searched_step_never_lowers_the_block_objective():
    """At the fixed point every step away lowers the objective, so the search halves down to
    its floor and keeps λ; from the start the natural-gradient step rises."""
    from ppl.infer.block_step import local_objective, searched_step
    data, _ = tiny_data(2)
    problem = _problem(HIERARCHY, data)
    key = problem.searched[0]
    result = run(problem, Options(seed=0, **TIGHT))
    state, layout = result.state, problem.families[key].layout
    best = state.natural[key]
    before = local_objective(problem, state, key)
    away = best + 0.5 * (_random_block(layout, np.random.default_rng(1))[None, :] - best)
    assert searched_step(problem, state, key, away, 1.0) == 0.0
    np.testing.assert_array_equal(state.natural[key], best)
    assert local_objective(problem, state, key) == before
    start = initialise(problem, np.random.default_rng(0))
    first = local_objective(problem, start, key)
    total = sum(f.message(start, key) for f in problem.neighbours[key])
    step = searched_step(problem, start, key, total, 1.0)
    assert step > 0 and local_objective(problem, start, key) > first


VARYING = ("data g: int[N]\ndata x: real[N]\ndata y: {kind}[N]\nconst G = 20\na ~ Normal(0, 1)\nb ~ Normal(0, 1)\n"
           "tau ~ Gamma(1, 1)\nfor j in 1..G {{\n  u[j] ~ Normal(0, tau)\n}}\n"
           "for n in 1..N {{\n  y[n] ~ {likelihood}(a + u[g[n]] + b * x[n]))\n}}\n")


@pytest.fixture
def dollars_by_group():
    """600 rows in 20 groups: a covariate in dollars (about 4e4) and a varying intercept."""
    rng = np.random.default_rng(3)
    group, income = rng.integers(20, size=600), rng.lognormal(10.5, 0.6, 600)
    y = rng.random(600) < 1 / (1 + np.exp(4 - 5e-5 * income - rng.normal(0, 0.3, 20)[group]))
    return VARYING.format(kind="bool", likelihood="Bernoulli(logistic"), {"g": group + 1, "x": income,
                                                                          "y": y.astype(int)}


def test_a_block_whose_search_finds_no_ascent_breaks_down_instead_of_looking_converged(dollars_by_group,
                                                                                      monkeypatch):
    """From the prior's margins (sd ~ 1e5, the start not narrowed) every step of the Jaakkola
    bound's natural gradient, down to 1/4096 of it, lowers the bound. The block kept its λ and the
    run stopped 'converged' with ELBO change 0; now E502 names it at the first refusal. (`ncvmp`
    and `cvi` ascend from there since their curvature at wide margins is right:
    tests/test_quadrature_wide.py.)"""
    text, data = dollars_by_group
    monkeypatch.setattr(initialise_module, "_narrow", lambda problem, state: None)
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text).infer(data, seed=0, gaussian_block="all", methods={"y": "bound:jaakkola"})
    assert info.value.code == "E502" and "no step along its natural gradient" in str(info.value)
    assert "in 10 sweeps running" not in str(info.value)
    assert "<string>:5:1" in str(info.value)  # at `a`, the block's first variable


def test_a_cvi_block_stops_after_stuck_refusals_in_a_row(dollars_by_group, monkeypatch):
    """Under cvi a refused step may be noise, so only STUCK in a row stop the run (with every step
    refused, a cvi block stopped 'converged' at an ELBO of −1e7: the smoothed trace was flat)."""
    from ppl.infer import block_step
    text, data = dollars_by_group
    calls = []

    def refuse(*args, **kwargs):
        calls.append(1)
        return 0.0
    monkeypatch.setattr(block_step, "searched_step", refuse)
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text).infer(data, seed=0, gaussian_block="all", methods={"y": "cvi"})
    assert info.value.code == "E502" and "in 10 sweeps running" in str(info.value)
    assert len(calls) == block_step.STUCK


def test_a_block_on_covariates_in_dollars_starts_narrowed_and_fits_above_mean_field(dollars_by_group):
    """The block's λ is scaled as one q, mean kept, so that its widest margin has variance WIDEST
    (as mean field's members are): it reaches a fixed point above mean field's, with the same slope."""
    text, data = dollars_by_group
    block = ppl.compile(text).infer(data, seed=0, gaussian_block="all")
    meanfield = ppl.compile(text).infer(data, seed=0)
    assert block.converged and meanfield.converged
    assert block.notes[0].startswith("`[a, b, u, tau]` started narrowed")
    assert block.elbo > meanfield.elbo + 1.0
    assert abs(block["b"].mean - meanfield["b"].mean) < 0.1 * meanfield["b"].sd


def test_counts_in_the_thousands_fit_in_a_block_from_irls_sites():
    """Counts near e⁷ with a varying intercept: the block starts from its priors' messages plus the
    Poisson's sites at IRLS's start, as mean field does (it stopped with E502 from the neutral
    start); the joint q's ELBO is above mean field's."""
    rng = np.random.default_rng(3)
    group, x = rng.integers(20, size=600), rng.normal(size=600)
    y = rng.poisson(np.exp(7 + rng.normal(0, 0.3, 20)[group] + 0.2 * x))
    text = VARYING.format(kind="int", likelihood="Poisson(exp")
    data = {"g": group + 1, "x": x, "y": y}
    block = ppl.compile(text).infer(data, seed=0, gaussian_block="all")
    meanfield = ppl.compile(text).infer(data, seed=0)
    assert block.converged and meanfield.converged
    assert block.elbo > meanfield.elbo + 1.0
    assert abs(block["b"].mean - meanfield["b"].mean) < 0.1 * meanfield["b"].sd


def test_laplace_in_a_block_takes_its_steps_unjudged_and_reaches_its_fixed_point():
    """Laplace's messages are derivatives at the point, not the gradient of its objective: judged
    by that objective, the block's search stalled at sweep 12 with a step still to take (0.03 in
    λ) and the run stopped 'converged' with no mean moving. Unjudged, it reaches the fixed point
    of a run 1e4 times tighter."""
    model = ppl.load(MODELS / "hierarchical_logistic.vim")
    data = str(MODELS / "hierarchical_logistic.csv")
    post = model.infer(data, seed=0, gaussian_block="all", methods={"y": "laplace"})
    tight = model.infer(data, seed=0, gaussian_block="all", methods={"y": "laplace"}, tol=1e-10, mean_tol=1e-9,
                        max_iter=2000)
    assert post.converged and tight.converged and post.convergence.mean_change > 0
    assert abs(post.elbo - tight.elbo) < 1e-5
    assert np.max(np.abs(post["mu_b"].mean - tight["mu_b"].mean) / tight["mu_b"].sd) < 1e-3
