"""One Gaussian q over a Markov chain x[1..T] (`ppl.graph.chain`, `NormalChain`, `factors/chain.py`).

Checked against computations written here with numpy alone:

- the family: moments, entropy and log-partition against the dense tridiagonal precision, its
  gradient against finite differences, the inverse map, joint draws;
- Khan & Lin's App. E.2 (digest §4, target 13): one NC-VMP or CVI update of the chain equals a
  Rauch–Tung–Striebel smoother run on the pseudo-data (ỹ_t, 1/τ̃_t) of the observation sites —
  means, variances and lag-one covariances;
- Gaussian observations: one update is the exact Kalman smoother, and the ELBO is then the
  exact log marginal likelihood of the Kalman filter;
- the ELBO never falls under VMP with a latent AR coefficient;
- the AR coefficient of `models/kalman_bernoulli.vim` against the exact posterior by the
  forward algorithm on a grid of states;
- what the analyzer recognises, and the refusals.
"""

import copy
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logsumexp

import ppl
from ppl.diagnostics import ModelError
from ppl.families import NormalChain
from ppl.infer import build_problem
from ppl.infer.engine import ElboDecreaseWarning, _update
from ppl.infer.initialise import initialise

MODELS = Path(__file__).resolve().parents[1] / "models"
T = 40
A, B, M1, P1, Q = 0.9, 0.1, 0.3, 2.0, 4.0  # x1 ~ N(M1, 1/P1), x_t = A x_{t-1} + B + N(0, 1/Q)

CHAIN = f"""
const a = {A}
data y: KIND[T]
x[1] ~ Normal({M1}, {P1})
for t in 2..T {{
  x[t] ~ Normal(a * x[t-1] + {B}, {Q})
}}
for t in 1..T {{
  y[t] ~ OBSERVATION
}}
"""


def chain_text(kind: str, observation: str) -> str:
    return CHAIN.replace("KIND", kind).replace("OBSERVATION", observation)


def states(seed=0):
    rng = np.random.default_rng(seed)
    x = np.empty(T)
    x[0] = M1 + rng.normal() / np.sqrt(P1)
    for t in range(1, T):
        x[t] = A * x[t - 1] + B + rng.normal() / np.sqrt(Q)
    return x, rng


def rts(y, r, a=A, b=B, m1=M1, p1=P1, q=Q):
    """The Kalman filter and RTS smoother for x1 ~ N(m1, 1/p1), x_t = a x_{t-1} + b + N(0, 1/q),
    y_t = x_t + N(0, r_t) (r a variance), a plain loop: smoothed means, variances, lag-one
    covariances Cov(x_t, x_{t-1} | y), and log p(y) by the prediction-error decomposition."""
    n = len(y)
    mf, pf, mp, pp = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    loglik = 0.0
    for t in range(n):
        mp[t], pp[t] = (m1, 1 / p1) if t == 0 else (a * mf[t - 1] + b, a * a * pf[t - 1] + 1 / q)
        s = pp[t] + r[t]
        loglik += -0.5 * np.log(2 * np.pi * s) - 0.5 * (y[t] - mp[t]) ** 2 / s
        gain = pp[t] / s
        mf[t], pf[t] = mp[t] + gain * (y[t] - mp[t]), (1 - gain) * pp[t]
    ms, ps, lag = mf.copy(), pf.copy(), np.empty(n - 1)
    for t in range(n - 2, -1, -1):
        j = pf[t] * a / pp[t + 1]
        ms[t] = mf[t] + j * (ms[t + 1] - mp[t + 1])
        ps[t] = pf[t] + j * j * (ps[t + 1] - pp[t + 1])
        lag[t] = j * ps[t + 1]
    return ms, ps, lag, loglik


def problem_of(text, data):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def tridiagonal(rng, n):
    sub = rng.uniform(-1, 1, n - 1)
    return rng.uniform(2.2, 4, n), sub


# ---------------------------------------------------------------- the family

def test_moments_entropy_and_partition_match_the_dense_precision():
    rng = np.random.default_rng(1)
    diagonal, sub = tridiagonal(rng, 9)
    mean = rng.normal(size=9)
    family = NormalChain()
    nat = family.natural(mean=mean, diagonal=diagonal, offdiagonal=sub)
    dense = np.diag(diagonal) + np.diag(sub, -1) + np.diag(sub, 1)
    cov = np.linalg.inv(dense)
    moments = family.moments(nat)
    np.testing.assert_allclose(moments["mean"], mean, atol=1e-13)
    np.testing.assert_allclose(moments["variance"], np.diag(cov), rtol=1e-12)
    np.testing.assert_allclose(moments["lag"], np.diag(cov, -1), rtol=1e-11, atol=1e-14)
    logdet = np.linalg.slogdet(dense)[1]
    assert family.entropy(nat).sum() == pytest.approx(4.5 * (1 + np.log(2 * np.pi)) - 0.5 * logdet, abs=1e-12)
    assert family.log_partition(nat).sum() == pytest.approx(0.5 * mean @ dense @ mean - 0.5 * logdet, abs=1e-12)


def test_gradient_of_the_log_partition_is_the_mean_and_the_maps_invert():
    rng = np.random.default_rng(2)
    diagonal, sub = tridiagonal(rng, 6)
    family = NormalChain()
    nat = family.natural(mean=rng.normal(size=6), diagonal=diagonal, offdiagonal=sub)
    grad, h = np.zeros_like(nat), 1e-6
    for index in np.ndindex(nat.shape):
        if index == (0, 2):  # K_1 pairs x_1 with nothing
            continue
        e = np.zeros_like(nat)
        e[index] = h
        grad[index] = (family.log_partition(nat + e).sum() - family.log_partition(nat - e).sum()) / (2 * h)
    np.testing.assert_allclose(grad, family.to_mean(nat), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(family.to_natural(family.to_mean(nat)), nat, atol=1e-11)


def test_draws_have_the_chain_covariance():
    rng = np.random.default_rng(3)
    diagonal, sub = tridiagonal(rng, 5)
    family = NormalChain()
    nat = family.natural(mean=np.arange(5.0), diagonal=diagonal, offdiagonal=sub)
    draws = family.sample(nat, rng, 200_000)
    dense = np.diag(diagonal) + np.diag(sub, -1) + np.diag(sub, 1)
    np.testing.assert_allclose(np.cov(draws.T), np.linalg.inv(dense), atol=5e-3)
    np.testing.assert_allclose(draws.mean(0), np.arange(5.0), atol=5e-3)


# ---------------------------------------------------------------- one update is a Kalman smoother

OBSERVATIONS = {
    "logistic, ncvmp": ("bool", "Bernoulli(logistic(x[t]))", lambda x, rng: rng.binomial(1, expit(x))),
    "logistic, cvi": ("bool", "Bernoulli(logistic(x[t])) @cvi(step=1, kappa=0, samples=16)",
                      lambda x, rng: rng.binomial(1, expit(x))),
    "poisson, ncvmp": ("int", "Poisson(exp(x[t]))", lambda x, rng: rng.poisson(np.exp(x))),
}


@pytest.mark.parametrize("case", OBSERVATIONS)
def test_one_update_is_a_kalman_smoother_on_the_pseudo_data(case):
    kind, observation, draw = OBSERVATIONS[case]
    x, rng = states()
    problem = problem_of(chain_text(kind, observation), {"y": draw(x, rng)})
    state = initialise(problem, np.random.default_rng(0))
    state.rng = np.random.default_rng(5)
    for _ in range(2):  # away from the prior: sites from a data-informed q(x)
        _update(problem, state, "x", 1.0)
    observation = next(f for f in problem.factors if f.name == "y[t]")
    draws = copy.deepcopy(state.rng)
    target, tau = (v[:, 0] for v in observation.sites(state))
    state.rng = draws  # the update below draws the same Monte Carlo sites
    _update(problem, state, "x", 1.0)
    got = problem.families["x"].moments(state.natural["x"])
    mean, variance, lag, _ = rts(target, 1.0 / tau)
    np.testing.assert_allclose(got["mean"], mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got["variance"], variance, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got["lag"], lag, rtol=0, atol=1e-10)


def test_gaussian_observations_give_the_exact_smoother_and_evidence():
    x, rng = states(1)
    r = 0.5  # observation precision
    y = x + rng.normal(size=T) / np.sqrt(r)
    post = ppl.compile(chain_text("real", f"Normal(x[t], {r})")).infer({"y": y}, max_iter=2)
    mean, variance, lag, loglik = rts(y, np.full(T, 1 / r))
    np.testing.assert_allclose(post["x"].mean, mean, atol=1e-10)
    np.testing.assert_allclose(post["x"].sd ** 2, variance, atol=1e-10)
    np.testing.assert_allclose(post["x"].family.moments(post["x"].natural)["lag"], lag, atol=1e-10)
    assert post.trace[0] == pytest.approx(loglik, abs=1e-9)  # q is the exact posterior after one sweep


def test_elbo_never_falls_with_a_latent_coefficient_intercept_and_precision():
    """Every coordinate update is exact under VMP, so a message that used E[x_t]E[x_{t-1}] for
    E[x_t x_{t-1}] (to `a`, to `tau`, in the ELBO) would show as a falling ELBO."""
    x, rng = states(2)
    y = x + rng.normal(size=T)
    text = chain_text("real", "Normal(x[t], 1.0)").replace(f"const a = {A}", """a ~ Normal(0, 1)
b ~ Normal(0, 1)
tau ~ Gamma(1, 1)
data c: real[T]""").replace(f"a * x[t-1] + {B}, {Q}", "c[t] * a * x[t-1] + b, tau")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ElboDecreaseWarning)
        post = ppl.compile(text).infer({"y": y, "c": np.full(T, 0.5)}, tol=1e-12, max_iter=300)
    trace = np.array(post.trace)
    assert len(trace) > 5
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    assert post["x"].name == "NormalChain"


# ---------------------------------------------------------------- the tutorial model

def grid_posterior_of_a(y, coefficients, q=10.0, states=np.linspace(-5, 5, 401)):
    """p(a | y) on a grid of a: log p(y | a) by the forward algorithm over a grid of states,
    times the N(0, 1) prior; returns the posterior mean and sd."""
    from scipy.stats import norm
    step = states[1] - states[0]
    emit = np.where(y[:, None] == 1, expit(states), expit(-states))
    logpost = []
    for a in coefficients:
        kernel = norm.pdf(states[None, :], a * states[:, None], 1 / np.sqrt(q)) * step
        p = norm.pdf(states) * step * emit[0]
        total = np.log(p.sum())
        p /= p.sum()
        for t in range(1, len(y)):
            p = (p @ kernel) * emit[t]
            total += np.log(p.sum())
            p /= p.sum()
        logpost.append(total + norm.logpdf(a))
    w = np.exp(np.array(logpost) - logsumexp(logpost))
    mean = w @ coefficients
    return mean, np.sqrt(w @ (coefficients - mean) ** 2), w


def test_kalman_bernoulli_recovers_the_coefficient():
    y = pd.read_csv(MODELS / "kalman_bernoulli.csv")["y"].to_numpy()
    grid = np.linspace(0.85, 1.02, 69)
    exact_mean, exact_sd, weights = grid_posterior_of_a(y, grid)
    assert weights[0] < 1e-6 and weights[-1] < 1e-6  # the grid holds the posterior
    post = ppl.load(MODELS / "kalman_bernoulli.vim").infer(MODELS / "kalman_bernoulli.csv", seed=0)
    assert abs(float(post["a"].mean) - exact_mean) < 0.01
    assert 0.5 * exact_sd < float(post["a"].sd) < 1.5 * exact_sd


# ---------------------------------------------------------------- what is a chain

def analysis(text):
    return ppl.compile(text).check_report()


def test_the_analyzer_finds_first_order_chains_only():
    found = analysis(chain_text("bool", "Bernoulli(logistic(x[t]))"))["chains"]
    assert [c["variable"] for c in found] == ["x"] and found[0]["factors"] == ["x[1]", "x[t]"]
    ar2 = """
data y: real[T]
x[1] ~ Normal(0, 1)
x[2] ~ Normal(0, 1)
for t in 3..T { x[t] ~ Normal(0.5 * x[t-1] + 0.2 * x[t-2], 1) }
for t in 1..T { y[t] ~ Normal(x[t], 1) }
"""
    assert analysis(ar2)["chains"] == []


def test_a_factor_reading_two_elements_is_refused_at_the_statement():
    text = chain_text("real", "Normal(x[t], 1.0)") + "for t in 2..T {\n  d[t] ~ Normal(x[t] - x[t-1], 1.0)\n}\n"
    text = text.replace("data y: real[T]", "data y: real[T]\ndata d: real[T]")
    with pytest.raises(ModelError) as error:
        ppl.compile(text).infer({"y": np.zeros(T), "d": np.zeros(T)})
    assert error.value.code == "E500" and "reads two elements of `x`" in str(error.value)
    assert error.value.span.line == text.splitlines().index("  d[t] ~ Normal(x[t] - x[t-1], 1.0)") + 1


def test_a_nonconjugate_rule_on_the_transition_is_refused():
    text = chain_text("real", "Normal(x[t], 1.0)").replace("a * x[t-1] + 0.1, 4.0)", "a * x[t-1] + 0.1, 4.0) @cvi")
    assert "@cvi" in text
    with pytest.raises(ModelError) as error:
        ppl.compile(text).infer({"y": np.zeros(T)})
    assert error.value.code == "E500" and "chain transition `x[t]`" in str(error.value)
