"""VMP against closed forms: conjugate posteriors, the VI chapter's VB fixed point, ELBO monotone."""

import numpy as np
import pytest
from scipy.special import betaln, gammaln

import ppl
from ppl.infer import Options, build_problem, run


def fit(text, data, **options):
    model = ppl.compile(text)
    dataset = model.bind(data)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    return problem, run(problem, Options(**{"seed": 0, "tol": 1e-13, "max_iter": 2000, **options}))


def assert_monotone(trace):
    steps = np.diff(trace)
    assert np.all(steps >= -1e-9 * np.abs(np.asarray(trace[1:]))), f"ELBO fell by {-steps.min():.3g}"


def test_beta_bernoulli_is_exact():
    y = np.array([1, 0, 1, 1, 1, 0, 1, 1, 0, 1])
    problem, result = fit("data y: bool[N]\ntheta ~ Beta(2, 3)\ny ~ Bernoulli(theta)", {"y": y})
    params = problem.families["theta"].params(result.state.natural["theta"])
    assert params["a"].item() == pytest.approx(2 + 7, abs=1e-10)
    assert params["b"].item() == pytest.approx(3 + 3, abs=1e-10)
    # With the exact posterior in the family, the ELBO is the log evidence.
    assert result.trace[-1] == pytest.approx(betaln(9, 6) - betaln(2, 3), abs=1e-10)


def test_gamma_poisson_is_exact():
    y = np.array([3, 0, 2, 5, 1, 2, 4])
    problem, result = fit("data y: int[N]\nlam ~ Gamma(2.0, 0.5)\ny ~ Poisson(lam)", {"y": y})
    params = problem.families["lam"].params(result.state.natural["lam"])
    assert params["shape"].item() == pytest.approx(2 + y.sum(), abs=1e-10)
    assert params["rate"].item() == pytest.approx(0.5 + len(y), abs=1e-10)
    a, b, n, s = 2.0, 0.5, len(y), y.sum()
    log_evidence = a * np.log(b) - gammaln(a) + gammaln(a + s) - (a + s) * np.log(b + n) - gammaln(y + 1).sum()
    assert result.trace[-1] == pytest.approx(log_evidence, abs=1e-10)


GAUSSIAN = """
const mu0 = 0.0
const kappa0 = 1.0
const a0 = 1.0
const b0 = 1.0
data y: real[N]
tau ~ Gamma(a0, b0)
mu ~ Normal(mu0, kappa0 * tau)
y ~ Normal(mu, tau)
"""


def test_normal_gamma_reaches_the_chapter_fixed_point():
    """Digest of the VI chapter, §2.6 and E5: b_N* = C·a_N/(a_N − ½) with C the exact rate."""
    y = np.random.default_rng(0).normal(0.5, 1, 10)
    problem, result = fit(GAUSSIAN, {"y": y}, tol=1e-300, max_iter=300)
    n, xbar = len(y), y.mean()
    a_exact = 1 + n / 2
    b_exact = 1 + 0.5 * ((y - xbar) ** 2).sum() + n * xbar**2 / (2 * (1 + n))
    a_n = 1 + (n + 1) / 2
    tau = problem.families["tau"].params(result.state.natural["tau"])
    mu = problem.families["mu"].params(result.state.natural["mu"])
    assert tau["shape"].item() == pytest.approx(a_n, rel=1e-12)
    assert tau["rate"].item() == pytest.approx(b_exact * a_n / (a_n - 0.5), rel=1e-9)
    assert mu["mean"].item() == pytest.approx(n * xbar / (1 + n), rel=1e-12)
    assert a_n / tau["rate"].item() == pytest.approx(a_exact / b_exact, rel=1e-9)
    assert result.trace[-1] == pytest.approx(-13.8117, abs=1e-4)
    assert_monotone(result.trace)
