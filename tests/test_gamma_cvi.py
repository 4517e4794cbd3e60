"""CVI for a Gamma q: Khan & Lin's toy model (App. E.3), `z ~ Gamma(a, b)`, `y ~ Gamma(z, 1)`.

Checked against computations written here with scipy alone:

- the Gauss rule for Ga(α, 1) against scipy's generalised Gauss–Laguerre rule, and its
  α-derivatives against finite differences;
- the Fisher solve C_λ⁻¹ ∇_λ E[h] against finite differences of E[h] in mean-parameter space
  (μ → λ by a root-finder, E[h] by adaptive quadrature), and the Monte Carlo estimate against it;
- the factor's E_q[log f] against adaptive quadrature;
- the fixed point of exact CVI against the ELBO optimum over Gamma q's, found by scipy.optimize
  over (log α, log β) with the ELBO and its gradient by adaptive quadrature;
- Monte Carlo CVI ending near that optimum;
- the erratum: with the paper's swapped mean parameters the update leaves the Gamma family for
  this model, and where a swapped fixed point exists (a prior-dominated variant) it is wrong;
- the validity guard, and the refusals that remain.
"""

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.special import digamma, gammaln, polygamma, roots_genlaguerre

import ppl
from ppl.diagnostics import ModelError
from ppl.families import Gamma
from ppl.infer import Options, build_problem, run
from ppl.infer.factors.gamma_cvi import (GammaCVIFactor, fisher_solve, gauss_gamma, monte_carlo_gradient,
                                         quadrature, shrink_until_valid)
from ppl.infer.initialise import initialise

TOY = """
const a = 2.0
const b = 1.0
data y: real[N]
z ~ Gamma(a, b)
y ~ Gamma(z, 1.0)"""
EXACT = " @cvi(samples=0, step=1, kappa=0)"
Y = np.random.default_rng(0).gamma(3.0, 1.0, 50)  # N = 50 draws from Gamma(shape 3, rate 1)


# ---------------------------------------------------------------- independent references

def expect(f, alpha, beta):
    """E[f(z)] under Ga(α, β) by adaptive quadrature in s = log(βz), where the density
    exp(αs − e^s)/Γ(α) is smooth and log z, log Γ(z) are not singular."""
    mode = np.log(alpha)
    lo, hi = mode - 40 / alpha - 12 / np.sqrt(alpha), np.log(alpha + 12 * np.sqrt(alpha) + 50)

    def integrand(s):
        return f(np.exp(s) / beta) * np.exp(alpha * s - np.exp(s) - gammaln(alpha))
    return sum(integrate.quad(integrand, l, h, epsabs=0, epsrel=1e-13, limit=500)[0]
               for l, h in ((lo, mode), (mode, hi)))


def log_joint(y, a, b):
    """z ↦ Σ_n log Ga(y_n | z, 1) + log Ga(z | a, b)."""
    sly, sy, n = np.log(y).sum(), y.sum(), len(y)
    return lambda z: ((z - 1) * sly - sy - n * gammaln(z) + a * np.log(b) - gammaln(a)
                      + (a - 1) * np.log(z) - b * z)


def entropy(alpha, beta):
    return alpha - np.log(beta) + gammaln(alpha) + (1 - alpha) * digamma(alpha)


def elbo(alpha, beta, y=Y, a=2.0, b=1.0):
    return expect(log_joint(y, a, b), alpha, beta) + entropy(alpha, beta)


def elbo_optimum(y=Y, a=2.0, b=1.0):
    """argmax over Gamma q of E_q[log p(y, z)] + H[q], over u = (log α, log β), with the
    gradient by the score identities ∂_α E[L] = E[L (log βz − ψ(α))], ∂_β E[L] = E[L (α − βz)]/β
    (L centred at its value at the mean, which leaves both unchanged)."""
    joint = log_joint(y, a, b)

    def negative(u):
        alpha, beta = np.exp(u)
        c = joint(alpha / beta)
        value = expect(joint, alpha, beta) + entropy(alpha, beta)
        d_alpha = expect(lambda z: (joint(z) - c) * (np.log(beta * z) - digamma(alpha)), alpha, beta)
        d_beta = expect(lambda z: (joint(z) - c) * (alpha - beta * z), alpha, beta) / beta
        d_alpha += 1 + (1 - alpha) * polygamma(1, alpha)
        d_beta -= 1 / beta
        return -value, -np.array([alpha * d_alpha, beta * d_beta])

    n = len(y)
    start = optimize.minimize(negative, np.log([a + n * 3.0, b + n]), jac=True, method="BFGS").x
    # near the optimum the ELBO is flat to round-off (a 1e-6 change in α moves it by 1e-13),
    # so finish on the gradient alone
    result = optimize.root(lambda u: negative(u)[1], start, tol=1e-14)
    assert np.max(np.abs(result.fun)) < 1e-10, result  # a stationary point, whatever `success` says
    alpha, beta = np.exp(result.x)
    return alpha, beta, -negative(result.x)[0]


def natural_from_mean(mu):
    """λ = (α − 1, −β) with ∇A(λ) = μ, by a bracketing root-finder on log α − ψ(α) = log μ₂ − μ₁."""
    c = np.log(mu[1]) - mu[0]
    alpha = optimize.brentq(lambda x: np.log(x) - digamma(x) - c, 1e-6, 1e9, xtol=1e-300, rtol=1e-15)
    return alpha, alpha / mu[1]


# ---------------------------------------------------------------- helpers

def problem_for(text, y=Y):
    model = ppl.compile(text)
    dataset = model.bind({"y": y})
    return build_problem(model.checked, dataset, model.analyze(dataset))


def factors(problem):
    """(the prior's runtime, the CVI runtime)."""
    prior = next(f for f in problem.factors if f.name == "z")
    (cvi,) = [f for f in problem.factors if isinstance(f, GammaCVIFactor)]
    return prior, cvi


def state_at(problem, alpha, beta):
    state = initialise(problem, np.random.default_rng(0))
    state.set("z", Gamma().natural(shape=np.array([alpha]), rate=np.array([beta])))
    return state


def shape_rate(natural):
    params = Gamma().params(natural)
    return float(params["shape"][0]), float(params["rate"][0])


@pytest.fixture(scope="module")
def optimum():
    return elbo_optimum()


@pytest.fixture(scope="module")
def exact_run():
    result = run(problem_for(TOY + EXACT), Options(seed=0, max_iter=40, tol=1e-300))
    assert len(result.trace) == 40
    return result


# ---------------------------------------------------------------- the Gauss rule and the Fisher solve

@pytest.mark.parametrize("alpha", [0.5, 3.0, 40.0, 150.0])
def test_gauss_rule_is_scipys_generalised_laguerre_rule_normalised(alpha):
    x, w, _, _ = gauss_gamma(np.array(alpha))
    nodes, weights = roots_genlaguerre(32, alpha - 1)
    np.testing.assert_allclose(x, nodes, rtol=1e-12)
    # eigenvector components carry absolute, not relative, accuracy: tiny tail weights differ
    np.testing.assert_allclose(w, weights / np.exp(gammaln(alpha)), rtol=1e-8, atol=1e-15)
    assert w.sum() == pytest.approx(1.0, abs=1e-13)


def test_gauss_rule_is_batched_and_finite_where_scipys_weights_overflow():
    alphas = np.array([[2.0, 500.0], [1e4, 7.5]])
    x, w, dx, dw = gauss_gamma(alphas)
    assert x.shape == w.shape == dx.shape == dw.shape == (2, 2, 32)
    assert not np.isfinite(roots_genlaguerre(32, 499.0)[1]).all()  # Γ(500) overflows
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.sum(w * x, -1), alphas, rtol=1e-12)  # E[x] = α
    np.testing.assert_allclose(np.sum(w * x * x, -1), alphas * (alphas + 1), rtol=1e-11)
    np.testing.assert_allclose(x[1, 0], gauss_gamma(np.array(1e4))[0], rtol=1e-14)


@pytest.mark.parametrize("alpha", [0.7, 5.0, 200.0])
def test_gauss_rule_derivatives_are_finite_differences(alpha):
    _, _, dx, dw = gauss_gamma(np.array(alpha))
    h = 1e-6 * alpha
    (x1, w1, _, _), (x0, w0, _, _) = gauss_gamma(np.array(alpha + h)), gauss_gamma(np.array(alpha - h))
    np.testing.assert_allclose(dx, (x1 - x0) / (2 * h), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw, (w1 - w0) / (2 * h), rtol=1e-4, atol=1e-9 * np.max(np.abs(dw)))


FUNCTIONS = {  # h(z) and h'(z)
    "-lgamma(z+1)": (lambda z: -gammaln(z + 1), lambda z: -digamma(z + 1)),
    "exp(-z)": (lambda z: np.exp(-z), lambda z: -np.exp(-z)),
    "log1p(z)": (np.log1p, lambda z: 1 / (1 + z)),
    "z^2": (lambda z: z * z, lambda z: 2 * z),
}


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")  # quad at its round-off floor
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("alpha,beta", [(3.0, 2.0), (40.0, 10.0)])
def test_fisher_solve_is_the_derivative_in_mean_parameters(name, alpha, beta):
    """C_λ⁻¹ ∇_λ E[h] (eq 15) = ∂E[h]/∂μ by central differences in μ = (E log z, E z)."""
    h, dh = FUNCTIONS[name]
    _, grad = quadrature(lambda z: (h(z), dh(z)), np.array(beta), gauss_gamma(np.array(alpha)))
    solved = fisher_solve(np.array(alpha), np.array(beta), grad)
    mu = np.array([digamma(alpha) - np.log(beta), alpha / beta])
    differences = []
    for i in range(2):
        step = np.eye(2)[i] * 1e-4 * (1.0 / np.sqrt(alpha) if i == 0 else mu[1] / np.sqrt(alpha))
        up, down = natural_from_mean(mu + step), natural_from_mean(mu - step)
        differences.append((expect(h, *up) - expect(h, *down)) / (2 * step[i]))
    np.testing.assert_allclose(solved, differences, rtol=2e-6, atol=1e-9)


def test_monte_carlo_mean_gradient_agrees_with_the_fisher_solve():
    """The App. F estimate (C_λ and ∇_λ from the same draws) is consistent: 4·10⁵ draws land
    within a few standard errors of the exact mean-parameter gradient."""
    alpha, beta = 40.0, 10.0
    rest = FUNCTIONS["-lgamma(z+1)"]
    exact = fisher_solve(np.array(alpha), np.array(beta),
                         quadrature(lambda z: (rest[0](z), rest[1](z)), np.array(beta), gauss_gamma(np.array(alpha)))[1])
    draws = np.random.default_rng(1).gamma(alpha, 1 / beta, (200, 2000))
    estimates = monte_carlo_gradient(lambda z: (rest[0](z), rest[1](z)), draws)  # 200 batches of 2000
    error = estimates.mean(axis=0) - exact
    assert np.all(np.abs(error) < 4 * estimates.std(axis=0) / np.sqrt(200)), (error, estimates.std(axis=0))


# ---------------------------------------------------------------- the factor's ELBO term

@pytest.mark.parametrize("alpha,beta,rtol", [(0.5, 0.5, 1e-7), (2.0, 1.0, 1e-10), (2.0, 0.2, 1e-6),
                                             (30.0, 10.0, 1e-12), (175.0, 60.0, 1e-12), (1e4, 3e3, 1e-11)])
def test_expected_log_likelihood_is_the_adaptive_quadrature(alpha, beta, rtol):
    """E_q[Σ_n log Ga(y_n | z, 1)] from the factor (exact linear part, 32-node Gauss rule on
    −log Γ(z + 1)) against adaptive quadrature; a diffuse q (E[z] = 10, sd 7) is the hardest."""
    problem = problem_for(TOY + EXACT)
    _, cvi = factors(problem)
    likelihood = log_joint(Y, 1.0, 1.0)  # with a = b = 1 the prior term is −z
    reference = expect(lambda z: likelihood(z) + z, alpha, beta)
    assert cvi.elbo(state_at(problem, alpha, beta)) == pytest.approx(reference, rel=rtol, abs=0)


# ---------------------------------------------------------------- fixed points

def test_exact_cvi_fixed_point_is_the_elbo_optimum(exact_run, optimum):
    alpha, beta, best = optimum
    got = shape_rate(exact_run.state.natural["z"])
    assert abs(exact_run.trace[-1] - exact_run.trace[-2]) < 1e-12  # converged, not stopped
    np.testing.assert_allclose(got, (alpha, beta), rtol=1e-6)
    assert exact_run.trace[-1] == pytest.approx(best, abs=1e-8)
    assert exact_run.trace[-1] == pytest.approx(elbo(*got), abs=1e-9)  # the reported ELBO is exact
    assert alpha / beta == pytest.approx(2.929, abs=1e-3)  # the toy data's posterior mean of z


@pytest.mark.parametrize("annotation", ["@cvi(samples=0, step=0.5, kappa=0)", "@cvi(samples=0)"])
def test_damped_exact_cvi_reaches_the_same_fixed_point(annotation, exact_run):
    """A constant step of ½, and the default decaying ρ_t = t^−0.6, converge to the same q."""
    result = run(problem_for(TOY + " " + annotation), Options(seed=0, max_iter=150, tol=1e-300))
    np.testing.assert_allclose(result.state.natural["z"], exact_run.state.natural["z"], rtol=1e-7)


def test_exact_cvi_with_unit_step_is_the_ncvmp_update(optimum):
    """Khan & Lin eq 94: with β = 1 the new λ is the prior plus ∇_μ E[log f] — at the optimum
    the update returns the optimum (it is a fixed point)."""
    problem = problem_for(TOY + EXACT)
    prior, cvi = factors(problem)
    state = state_at(problem, *optimum[:2])
    target = prior.message(state, "z") + cvi.message(state, "z")
    np.testing.assert_allclose(shape_rate(target), optimum[:2], rtol=1e-7)


def test_monte_carlo_cvi_ends_near_the_optimum(optimum):
    """64 draws a sweep, ρ_t = t^−0.6, seed 0. Over 30 seeds E[z] was off by 0.03% ± 0.01%
    (the 1/S bias of App. F's estimate; 0.09% with 16 draws) and sd(z) by at most 0.7%."""
    alpha, beta, best = optimum
    posterior = ppl.compile(TOY + " @cvi(samples=64, kappa=0.6)").infer({"y": Y}, seed=0)
    assert posterior.converged
    assert posterior["z"].mean == pytest.approx(alpha / beta, rel=2e-3)
    assert posterior["z"].sd == pytest.approx(np.sqrt(alpha) / beta, rel=2e-2)
    assert best - 1e-3 < posterior.elbo <= best + 1e-9  # exact ELBO of a near-optimal q
    again = ppl.compile(TOY + " @cvi(samples=64, kappa=0.6)").infer({"y": Y}, seed=0)
    assert again["z"].mean == posterior["z"].mean  # seeded: reproducible


# ---------------------------------------------------------------- the erratum of App. E.3

def swapped_target(problem, state):
    """The paper's printed update: the gradient in its μ₁ = ψ(α) − log β paired with z and the
    gradient in μ₂ = α/β paired with log z, i.e. ppl's mean gradient with its entries swapped."""
    prior, cvi = factors(problem)
    return prior.message(state, "z") + cvi.message(state, "z")[:, ::-1]


def test_swapped_mean_parameters_leave_the_gamma_family(optimum):
    """For the toy model the swapped update asks for a negative rate at every q tried — at the
    optimum and on a grid of shapes and means — so it has no valid fixed point; with the
    guard it collapses towards β → 0, far from the optimum."""
    problem = problem_for(TOY + EXACT)
    alpha, beta, _ = optimum
    grid = [(alpha, beta)] + [(s, s / m) for s in (0.5, 2.0, 50.0, 1e3) for m in (0.5, 1.0, 3.0, 10.0)]
    states = [state_at(problem, shape, rate) for shape, rate in grid]  # alive: factors cache by id(state)
    for (shape, rate), state in zip(grid, states):
        assert not Gamma().valid(swapped_target(problem, state))[0], (shape, rate)
    state = initialise(problem, np.random.default_rng(0))
    for _ in range(50):
        state.set("z", shrink_until_valid(Gamma(), state.natural["z"], swapped_target(problem, state), 0.5))
    assert shape_rate(state.natural["z"])[1] < 1e-3 * beta


def test_swapped_mean_parameters_give_a_wrong_fixed_point():
    """Under a prior that outweighs the data (Ga(9000, 3000), mean 3, sd 0.03) the swapped update
    converges — to a different q, 5.9% higher in E[z] and 15 nats lower in ELBO than the optimum,
    which exact CVI finds."""
    text = TOY.replace("a = 2.0", "a = 9000.0").replace("b = 1.0", "b = 3000.0") + EXACT
    alpha, beta, best = elbo_optimum(a=9000.0, b=3000.0)
    problem = problem_for(text)
    state = initialise(problem, np.random.default_rng(0))
    for _ in range(40):
        state.set("z", swapped_target(problem, state))
    swapped = shape_rate(state.natural["z"])
    np.testing.assert_allclose(swapped_target(problem, state), state.natural["z"], rtol=1e-10)  # a fixed point
    assert swapped[0] / swapped[1] > 1.05 * alpha / beta
    assert elbo(*swapped, a=9000.0, b=3000.0) < best - 10
    correct = run(problem, Options(seed=0, max_iter=40, tol=1e-300))
    np.testing.assert_allclose(shape_rate(correct.state.natural["z"]), (alpha, beta), rtol=1e-6)


# ---------------------------------------------------------------- the validity guard

def test_shrink_until_valid_halves_the_step_of_invalid_rows_only():
    family = Gamma()
    current = family.natural(shape=np.array([2.0, 2.0]), rate=np.array([1.0, 1.0]))
    total = np.array([[4.0, -3.0], [4.0, 5.0]])  # row 1 asks for rate −5
    new = shrink_until_valid(family, current, total, 1.0)
    np.testing.assert_array_equal(new[0], total[0])
    # rate −1 + ρ(5 + 1) < 0 needs ρ < 1/6: ρ = 1/8
    np.testing.assert_allclose(new[1], current[1] + (total[1] - current[1]) / 8, rtol=1e-15)
    assert family.valid(new).all()


def test_engine_shrinks_a_step_that_would_make_the_rate_negative():
    """Data far above the prior mean (shape 30 against E[z] = 2): the first exact step asks for
    a negative rate; the engine takes the largest valid step ρ = 2^−k, and the run still
    reaches the ELBO optimum."""
    y = np.random.default_rng(2).gamma(30.0, 1.0, 50)
    problem = problem_for(TOY + EXACT, y)
    prior, cvi = factors(problem)
    state = initialise(problem, np.random.default_rng(0))
    first = prior.message(state, "z") + cvi.message(state, "z")
    assert not Gamma().valid(first)[0]
    rho = 1.0
    while not Gamma().valid(state.natural["z"] + rho * (first - state.natural["z"]))[0]:
        rho /= 2
    one = run(problem, Options(seed=0, max_iter=1, tol=1e-300))
    np.testing.assert_allclose(one.state.natural["z"], state.natural["z"] + rho * (first - state.natural["z"]),
                               rtol=1e-12)
    assert rho < 1
    alpha, beta, _ = elbo_optimum(y)
    result = run(problem, Options(seed=0, max_iter=200, tol=1e-300))
    np.testing.assert_allclose(shape_rate(result.state.natural["z"]), (alpha, beta), rtol=1e-6)


# ---------------------------------------------------------------- plates and refusals

def test_a_gamma_per_group_fits_each_group_on_its_own():
    """`y[n] ~ Gamma(z[g[n]], r[n])`: the reads gather and scatter by group, and the rate is data,
    so each group's q is the single-group fit to its own rows (with its rates)."""
    rng = np.random.default_rng(3)
    g = rng.integers(1, 4, 90)
    r = rng.uniform(0.5, 2.0, 90)
    y = rng.gamma(np.array([1.5, 3.0, 6.0])[g - 1], 1 / r)
    text = """
data g: int[N]
data r: real[N]
data y: real[N]
z ~ Gamma(2.0, 1.0)
y ~ Gamma(z, r)"""
    grouped = text.replace("z ~ Gamma(2.0, 1.0)", "for k in 1..3 { z[k] ~ Gamma(2.0, 1.0) }") \
                  .replace("y ~ Gamma(z, r)", "for n in 1..N { y[n] ~ Gamma(z[g[n]], r[n]) @cvi(samples=0, kappa=0) }")
    together = ppl.compile(grouped).infer({"g": g, "r": r, "y": y}, seed=0, tol=1e-12)
    for k in (1, 2, 3):
        rows = g == k
        alone = ppl.compile(text.replace("y ~ Gamma(z, r)", "y ~ Gamma(z, r) @cvi(samples=0, kappa=0)")).infer(
            {"g": g[rows], "r": r[rows], "y": y[rows]}, seed=0, tol=1e-12)
        np.testing.assert_allclose(together["z"].mean[k - 1], alone["z"].mean, rtol=1e-7)
        np.testing.assert_allclose(together["z"].sd[k - 1], alone["z"].sd, rtol=1e-6)


@pytest.mark.parametrize("text,message", [
    ("z ~ Gamma(2.0, 1.0)\nr ~ Gamma(1.0, 1.0)\ny ~ Gamma(z, r)", "rate to be data or a constant"),
    ("z ~ Gamma(2.0, 1.0)\ny ~ Gamma(2.0 * z, 1.0)", "the Gamma variable itself as the shape"),
    ("w ~ Normal(0.0, 1.0)\ny ~ Gamma(exp(w), 1.0)", "is not available in this version"),
    ("z ~ Gamma(2.0, 1.0)\ny ~ Gamma(z, 1.0) @cvi(samples=2)", "samples must be 0 (exact) or at least 3"),
    ("z ~ Gamma(2.0, 1.0)\ny ~ Gamma(z, 1.0) @cvi(minibatch=10)", "minibatches (`form`, `minibatch`) is not available"),
])
def test_what_still_refuses_is_a_located_e500(text, message):
    model = ppl.compile("data y: real[N]\n" + text)
    with pytest.raises(ModelError) as error:
        model.infer({"y": Y}, seed=0)
    assert error.value.code == "E500" and message in str(error.value)
    assert error.value.span is not None
