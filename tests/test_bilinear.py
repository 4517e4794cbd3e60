"""Bilinear margins `dot(u, v)` of two MvNormal reads, independent under mean field, against
independent computations: the margin's moments against the exact variance of a product of
independent Gaussians; every message against finite differences of the factor's expected
log-likelihood in the read's mean parameters (E[u], E[uuᵀ]); probabilistic matrix factorisation
(Normal likelihood, pure VMP) and binary factor analysis under `bound:jaakkola` against
hand-written coordinate-ascent loops from the same start, both monotone; and the piecewise bound
on binary FA below the exact expected log-likelihood by at most N·J·ε_max."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_expit

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer.access import Unsupported
from ppl.infer.initialise import initialise
from ppl.infer.likelihoods import jaakkola_lambda
from ppl.infer.linear import margin

MODELS = Path(__file__).resolve().parents[1] / "models"
K = 2

PMF = """
const K = 2
data y: real[N, J] from y1..yJ
for n in 1..N {
  u[n] ~ MvNormal(zeros(K), eye(K))
}
for j in 1..J {
  v[j] ~ MvNormal(zeros(K), eye(K))
}
tau ~ Gamma(1, 1)
for n in 1..N {
  for j in 1..J {
    y[n, j] ~ Normal(dot(u[n], v[j]), tau)
  }
}
"""

# binary FA with a data scale on the bilinear term, so the coefficient path is exercised too
SCALED_FA = (MODELS / "binary_fa.vim").read_text().replace(
    "data y: bool[N, J] from y1..yJ", "data y: bool[N, J] from y1..yJ\ndata s: real[N]").replace(
    "dot(lam[j], z[n])", "s[n] * dot(lam[j], z[n])")


def pmf_data(n=12, j=5, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, K)) @ rng.normal(size=(j, K)).T + 0.3 * rng.normal(size=(n, j))
    return pd.DataFrame(y, columns=[f"y{i + 1}" for i in range(j)]), y


def fa_data(n=40, seed=0):
    table = pd.read_csv(MODELS / "binary_fa.csv").iloc[:n]
    return table.assign(s=np.random.default_rng(seed).uniform(0.5, 1.5, n))


def run_start(problem, seed=0):
    """The state a run with `seed` starts from (`engine.run` spawns one generator per restart)."""
    return initialise(problem, np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]))


def problem_for(text, data, methods=None):
    model = ppl.compile(text)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset, methods))


def factor(problem, name="y"):
    return next(f for f in problem.factors if f.name.startswith(name + "["))


def randomise(state, names, seed=1):
    """Random means and random SPD covariances for every element of the MvNormal `names`."""
    rng = np.random.default_rng(seed)
    for name in names:
        family = state.families[name]
        rows = state.natural[name].shape[0]
        a = rng.normal(size=(rows, K, K))
        cov = a @ np.swapaxes(a, -1, -2) * 0.3 + 0.2 * np.eye(K)
        state.set(name, family.natural(mean=rng.normal(size=(rows, K)), precision=np.linalg.inv(cov)))


def mean_cov(state, name):
    return state.families[name].mean_cov(state.natural[name])


# ---------------------------------------------------------------- moments

def test_margin_of_a_scaled_bilinear_term_is_the_exact_product_moment():
    """Var(s·uᵀv + c) = s²[tr(ΣuΣv) + μuᵀΣvμu + μvᵀΣuμv] + Var(c), u, v, c independent."""
    data = fa_data()
    problem = problem_for(SCALED_FA, data)
    state = initialise(problem, np.random.default_rng(0))
    randomise(state, ["z", "lam"])
    m, v = margin(state, factor(problem).margin)
    mz, sz = mean_cov(state, "z")
    ml, sl = mean_cov(state, "lam")
    mc, vc = state.families["c"].mean(state.natural["c"]), state.families["c"].sd(state.natural["c"]) ** 2
    s = data["s"].to_numpy()
    mean = np.empty((len(s), len(mc)))
    var = np.empty_like(mean)
    for n in range(len(s)):
        for j in range(len(mc)):
            mean[n, j] = s[n] * mz[n] @ ml[j] + mc[j]
            var[n, j] = s[n] ** 2 * (np.trace(sz[n] @ sl[j]) + mz[n] @ sl[j] @ mz[n] + ml[j] @ sz[n] @ ml[j]) + vc[j]
    np.testing.assert_allclose(m.reshape(mean.shape), mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v.reshape(var.shape), var, rtol=1e-12, atol=1e-12)


def test_bilinear_moments_match_monte_carlo_draws():
    problem = problem_for(PMF, pmf_data()[0])
    state = initialise(problem, np.random.default_rng(0))
    randomise(state, ["u", "v"])
    m, v = margin(state, factor(problem).mean)
    rng = np.random.default_rng(2)
    draws = 200_000
    mu, su = mean_cov(state, "u")
    mv, sv = mean_cov(state, "v")
    u = mu[3] + rng.standard_normal((draws, K)) @ np.linalg.cholesky(su[3]).T
    w = mv[1] + rng.standard_normal((draws, K)) @ np.linalg.cholesky(sv[1]).T
    product = np.sum(u * w, -1)
    se = product.std() / np.sqrt(draws)
    assert abs(product.mean() - m[3, 1, 0]) < 5 * se
    assert product.var() == pytest.approx(v[3, 1, 0], rel=0.02)


# ---------------------------------------------------------------- messages

def finite_difference(problem, state, name, row, direction, step=1e-5):
    """d/dt of the factor's E[log f] as the mean parameters of element `row` move along `direction`."""
    family = state.families[name]
    lik = factor(problem)
    base = state.moments(name).copy()
    values = []
    for t in (step, -step):
        mean = base.copy()
        mean[row] += t * direction
        state.set(name, family.to_natural(mean))
        values.append(lik.elbo(state))
    state.set(name, family.to_natural(base))
    return (values[0] - values[1]) / (2 * step)


def directions(rng, count=3):
    """Random directions in (E[x], E[xxᵀ]) with a symmetric matrix part."""
    for _ in range(count):
        a = rng.normal(size=(K, K))
        yield np.concatenate([rng.normal(size=K), (a + a.T).ravel()])


def assert_message_is_the_gradient(problem, vectors, name, row, tol):
    """At a random q of the `vectors`, the message to element `row` of `name`, dotted with random
    directions, equals the finite-difference derivative of E[log f] along them."""
    state = initialise(problem, np.random.default_rng(0))
    randomise(state, vectors)
    message = factor(problem).message(state, name)[row]
    for direction in directions(np.random.default_rng(3)):
        assert message @ direction == pytest.approx(finite_difference(problem, state, name, row, direction),
                                                    rel=tol, abs=tol)


@pytest.mark.parametrize("name, row", [("u", 4), ("v", 2)])
def test_vmp_messages_are_the_gradient_of_the_expected_normal_log_likelihood(name, row):
    """E[log N(y | uᵀv, τ)] is linear in (E[u], E[uuᵀ]); the VMP message is its gradient, summed
    over the items j (to u[n]) or the rows n (to v[j])."""
    assert_message_is_the_gradient(problem_for(PMF, pmf_data()[0]), ["u", "v"], name, row, tol=1e-7)


@pytest.mark.parametrize("rule", ["ncvmp", "bound:jaakkola", "bound:bohning", "bound:piecewise"])
@pytest.mark.parametrize("name, row", [("z", 7), ("lam", 3)])
def test_site_messages_are_the_gradient_of_the_rule_objective(rule, name, row):
    """Through the Gaussian site, the message to a vector of a bilinear logit is ∇ of the rule's
    objective (E[log f], or its bound) in that vector's mean parameters."""
    assert_message_is_the_gradient(problem_for(SCALED_FA, fa_data(), {"y": rule}), ["z", "lam"], name, row,
                                   tol=1e-6)


# ---------------------------------------------------------------- sweeps

def pmf_loop(y, start, order, sweeps):
    """Hand-written mean-field CAVI for y_nj ~ N(u_nᵀv_j, 1/τ), u, v ~ N(0, I), τ ~ Gamma(1, 1)."""
    (mu, su), (mv, sv), (a, b) = start
    n, j = y.shape
    for _ in range(sweeps):
        for name in order:
            tau = a / b
            if name == "u":
                outer = sv + mv[:, :, None] * mv[:, None, :]
                su = np.broadcast_to(np.linalg.inv(np.eye(K) + tau * outer.sum(0)), (n, K, K)).copy()
                mu = np.einsum("nij,nj->ni", su, tau * y @ mv)
            elif name == "v":
                outer = su + mu[:, :, None] * mu[:, None, :]
                sv = np.broadcast_to(np.linalg.inv(np.eye(K) + tau * outer.sum(0)), (j, K, K)).copy()
                mv = np.einsum("nij,nj->ni", sv, tau * y.T @ mu)
            else:
                eu, ev = su + mu[:, :, None] * mu[:, None, :], sv + mv[:, :, None] * mv[:, None, :]
                squared = y ** 2 - 2 * y * (mu @ mv.T) + np.einsum("nde,jde->nj", eu, ev)
                a, b = 1 + y.size / 2, 1 + squared.sum() / 2
    return (mu, su), (mv, sv), (a, b)


def assert_monotone_run_matches(result, vectors, atol):
    """The run's objective never falls and rises, and q of each MvNormal in `vectors` is the
    hand-written loop's (mean, covariance)."""
    assert np.all(np.diff(result.trace) >= -1e-9 * np.abs(result.trace[1:]))
    assert result.trace[-1] > result.trace[0] + 10
    for name, (mean, cov) in vectors.items():
        m, c = mean_cov(result.state, name)
        np.testing.assert_allclose(m, mean, atol=atol)
        np.testing.assert_allclose(c, cov, atol=atol)


def test_pmf_is_monotone_and_matches_a_hand_written_cavi_loop():
    table, y = pmf_data()
    problem = problem_for(PMF, table)
    assert problem.pure_vmp
    start = run_start(problem)
    gamma = start.families["tau"].params(start.natural["tau"])
    (mu, su), (mv, sv), (a, b) = pmf_loop(y, (mean_cov(start, "u"), mean_cov(start, "v"),
                                              (gamma["shape"][0], gamma["rate"][0])), problem.order, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ElboDecreaseWarning fails the test
        result = run(problem, Options(seed=0, max_iter=30, tol=1e-300, accelerate=False))  # the plain sweep
    assert_monotone_run_matches(result, {"u": (mu, su), "v": (mv, sv)}, atol=1e-9)
    gamma = result.state.families["tau"].params(result.state.natural["tau"])
    assert gamma["shape"][0] == pytest.approx(a, rel=1e-12)
    assert gamma["rate"][0] == pytest.approx(b, rel=1e-9)


def jaakkola_fa_loop(y, start, order, sweeps):
    """Hand-written Jaakkola EM for binary FA (thesis Alg. 4 with priors on λ and c): before
    each block, ξ² = E[η²] at the current q, then the block's Gaussian posterior under the bound."""
    (mz, sz), (ml, sl), (mc, vc) = start
    n, j = y.shape
    for _ in range(sweeps):
        for name in order:
            ez, el = sz + mz[:, :, None] * mz[:, None, :], sl + ml[:, :, None] * ml[:, None, :]
            bilinear = mz @ ml.T
            xi2 = np.einsum("nde,jde->nj", ez, el) + 2 * bilinear * mc + mc ** 2 + vc
            lam = jaakkola_lambda(np.sqrt(xi2))
            if name == "z":
                precision = np.eye(K) + 2 * np.einsum("nj,jde->nde", lam, el)
                sz = np.linalg.inv(precision)
                mz = np.einsum("nde,ne->nd", sz, (y - 0.5 - 2 * lam * mc) @ ml)
            elif name == "lam":
                precision = np.eye(K) + 2 * np.einsum("nj,nde->jde", lam, ez)
                sl = np.linalg.inv(precision)
                ml = np.einsum("jde,je->jd", sl, (y - 0.5 - 2 * lam * mc).T @ mz)
            else:
                vc = 1 / (1 + 2 * lam.sum(0))
                mc = vc * np.sum(y - 0.5 - 2 * lam * bilinear, 0)
    return (mz, sz), (ml, sl), (mc, vc)


def test_binary_fa_under_jaakkola_is_monotone_and_matches_a_hand_written_loop():
    table = pd.read_csv(MODELS / "binary_fa.csv").iloc[:60]
    y = table.to_numpy(dtype=float)
    problem = problem_for((MODELS / "binary_fa.vim").read_text(), table, {"y": "jaakkola"})
    start = run_start(problem)
    family_c = start.families["c"]
    c0 = (family_c.mean(start.natural["c"]), family_c.sd(start.natural["c"]) ** 2)
    (mz, sz), (ml, sl), (mc, vc) = jaakkola_fa_loop(y, (mean_cov(start, "z"), mean_cov(start, "lam"), c0),
                                                    problem.order, 25)
    result = run(problem, Options(seed=0, max_iter=25, tol=1e-300, accelerate=False))  # the plain sweep
    assert_monotone_run_matches(result, {"z": (mz, sz), "lam": (ml, sl)}, atol=1e-8)
    np.testing.assert_allclose(family_c.mean(result.state.natural["c"]), mc, atol=1e-8)


def test_piecewise_bound_on_binary_fa_is_below_the_exact_term_within_nj_epsilon():
    """Σ_nj piecewise term ≤ Σ_nj E_q[log σ((2y − 1)η)] (Gauss–Hermite on each margin, computed
    here from q's means and covariances) ≤ the same + N·J·ε_max (thesis Thm 4.6.2)."""
    from ppl.infer.piecewise import table
    from ppl.infer.factors.glm_options import PIECEWISE_KIND, PIECEWISE_PIECES
    y = pd.read_csv(MODELS / "binary_fa.csv").to_numpy(dtype=float)
    post = ppl.load(MODELS / "binary_fa.vim").infer(MODELS / "binary_fa.csv", methods={"y": "bound:piecewise"},
                                                    seed=0, tol=1e-8)
    mz, sz = post["z"].family.mean_cov(post["z"].natural)
    ml, sl = post["lam"].family.mean_cov(post["lam"].natural)
    mc, vc = post["c"].mean, post["c"].sd ** 2
    m = mz @ ml.T + mc
    v = (np.einsum("nde,jed->nj", sz, sl) + np.einsum("nd,jde,ne->nj", mz, sl, mz)
         + np.einsum("jd,nde,je->nj", ml, sz, ml) + vc)
    nodes, weights = np.polynomial.hermite.hermgauss(120)
    eta = m[..., None] + np.sqrt(2 * v)[..., None] * nodes
    exact = np.sum(weights / np.sqrt(np.pi) * log_expit((2 * y[..., None] - 1) * eta))
    bound = post.elbo_terms["E[log p(y[n, j])]"]
    slack = y.size * table(PIECEWISE_KIND, PIECEWISE_PIECES).max_error
    assert bound < exact <= bound + slack


# ---------------------------------------------------------------- initialisation and refusals

def test_initialisation_breaks_the_zero_saddle_of_both_vectors():
    problem = problem_for(PMF, pmf_data()[0])
    state = initialise(problem, np.random.default_rng(0))
    for name in ("u", "v"):
        mean, cov = mean_cov(state, name)
        assert np.all(np.abs(mean).sum(-1) > 0)
        np.testing.assert_allclose(cov, np.broadcast_to(np.eye(K), cov.shape), atol=1e-12)  # the prior's


@pytest.mark.parametrize("logit, message", [
    ("dot(z[n], z[n])", "reads `z` on both sides"),
    ("dot(lam[j] + z[n], z[n])", "one MvNormal vector on each side"),
])
def test_dot_of_latents_that_are_not_two_independent_vectors_is_refused(logit, message):
    text = (MODELS / "binary_fa.vim").read_text().replace("dot(lam[j], z[n])", logit)
    with pytest.raises(Unsupported, match=message) as error:
        problem_for(text, fa_data())
    assert error.value.span is not None
