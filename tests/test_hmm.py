"""Hidden Markov models: q(z) one discrete chain per sequence (`ppl.graph.chain`,
`CategoricalChain`, `factors/discrete_chain.py`).

- `models/hmm.vim` sweep by sweep against a VB-HMM written here in numpy alone (Beal 2003,
  ch. 3: scaled forward–backward in probability space, Normal–Gamma updates, the bound as
  log Z̃ − KL(q(θ) ‖ p(θ))): the same ELBO to 1e-10 after every sweep, never decreasing;
- against hmmlearn's VariationalGaussianHMM on the same priors: its bound evaluated at our
  q(θ), and its own fixed point, equal our ELBO to 1e-6 once its missing −½ log 2π per frame is
  added back;
- several sequences in one table (`@sequences(by=seq)`) against hmmlearn's
  VariationalCategoricalHMM with `lengths`;
- what the analyzer recognises, and the refusals.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import digamma, gammaln

import ppl
from ppl.diagnostics import DataError, ModelError
from ppl.infer import build_problem
from ppl.infer.engine import _update
from ppl.infer.initialise import initialise

MODELS = Path(__file__).resolve().parents[1] / "models"
M0, BETA0, A0, B0 = 70.0, 1.0, 0.5, 0.0005  # the constants of models/hmm.vim


def _problem(path, data, constants=None):
    model = ppl.load(path, set=constants)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


# ---- an independent VB-HMM ------------------------------------------------------------------

def kl_dirichlet(a, a0):
    return (gammaln(a.sum(-1)) - gammaln(a).sum(-1) - gammaln(a0.sum(-1)) + gammaln(a0).sum(-1)
            + ((a - a0) * (digamma(a) - digamma(a.sum(-1, keepdims=True)))).sum(-1))


def kl_normal_gamma(m, beta, a, b, m0):
    kl_gamma = (a - A0) * digamma(a) - gammaln(a) + gammaln(A0) + A0 * (np.log(b) - np.log(B0)) + a * (B0 - b) / b
    kl_mean = 0.5 * (BETA0 / beta - 1 - np.log(BETA0 / beta) + BETA0 * (a / b) * (m - m0) ** 2)
    return kl_gamma + kl_mean


def scaled_forward_backward(start, trans, like):
    """Rabiner's scaled recursions in probability space: (γ, Σ_t ξ_t, log Z̃)."""
    steps, k = like.shape
    alpha, scale = np.zeros((steps, k)), np.zeros(steps)
    a = start * like[0]
    for t in range(steps):
        if t:
            a = (alpha[t - 1] @ trans) * like[t]
        scale[t] = a.sum()
        alpha[t] = a / scale[t]
    beta = np.ones((steps, k))
    for t in range(steps - 2, -1, -1):
        beta[t] = trans @ (like[t + 1] * beta[t + 1]) / scale[t + 1]
    gamma = alpha * beta
    xi = sum(np.outer(alpha[t - 1], like[t] * beta[t]) * trans / scale[t] for t in range(1, steps))
    return gamma, xi, np.log(scale).sum()


def vb_hmm(y, gamma, xi, sweeps, m0):
    """VB-EM for a Gaussian-emission HMM from responsibilities (γ, Σξ); the bound after each sweep."""
    k = gamma.shape[1]
    bounds = []
    for _ in range(sweeps):
        alpha_pi = 1.0 + gamma[0]
        alpha_a = 1.0 + xi
        n = gamma.sum(0)
        beta = BETA0 + n
        m = (BETA0 * m0 + gamma.T @ y) / beta
        a = A0 + n / 2
        b = B0 + 0.5 * (gamma.T @ y ** 2 + BETA0 * m0 ** 2 - beta * m ** 2)
        log_like = (0.5 * (digamma(a) - np.log(b)) - 0.5 * np.log(2 * np.pi)
                    - 0.5 * (1 / beta + (a / b) * (y[:, None] - m) ** 2))
        shift = log_like.max(axis=1, keepdims=True)
        start = np.exp(digamma(alpha_pi) - digamma(alpha_pi.sum()))
        trans = np.exp(digamma(alpha_a) - digamma(alpha_a.sum(1, keepdims=True)))
        gamma, xi, log_z = scaled_forward_backward(start, trans, np.exp(log_like - shift))
        bounds.append(log_z + shift.sum() - kl_dirichlet(alpha_pi, np.ones(k))
                      - kl_dirichlet(alpha_a, np.ones((k, k))).sum() - kl_normal_gamma(m, beta, a, b, m0).sum())
    return np.array(bounds), gamma


@pytest.mark.parametrize("scale, tolerance", [("standardised", 1e-10), ("minutes", 1e-12)])
def test_vb_hmm_equals_a_numpy_vb_hmm_sweep_by_sweep(scale, tolerance):
    """Standardised waiting times: the two ELBOs agree to 1e-10 absolute. In minutes, q(μ, τ)'s
    natural parameters carry β m² ≈ 1e6, whose rounding alone is 1e6 × 2.2e-16 ≈ 2e-10 in A(λ),
    so there the check is relative (1e-12 of the ELBO)."""
    y = np.loadtxt(MODELS / "hmm.csv", skiprows=1)
    m0 = M0
    if scale == "standardised":
        y, m0 = (y - y.mean()) / y.std(), 0.0
    problem = _problem(MODELS / "hmm.vim", pd.DataFrame({"waiting": y}), {"m0": m0})
    state = initialise(problem, np.random.default_rng(0))
    moments = state.moments("z")
    k = problem.families["z"].k
    gamma0 = moments[:, :k]
    np.testing.assert_allclose(moments[1:, k:].reshape(-1, k, k), gamma0[:-1, :, None] * gamma0[1:, None, :],
                               atol=1e-15)  # the start: independent rows
    trace = []
    for _ in range(30):
        for name in problem.order:
            _update(problem, state, name, 1.0)
        trace.append(problem.elbo(state))
    reference, gamma = vb_hmm(y, gamma0, (gamma0[:-1, :, None] * gamma0[1:, None, :]).sum(0), 30, m0)
    np.testing.assert_allclose(trace, reference, rtol=0, atol=tolerance * (1 if scale == "standardised" else
                                                                          abs(reference[-1])))
    np.testing.assert_allclose(state.moments("z")[:, :k], gamma, atol=1e-10)
    assert np.all(np.diff(trace) >= -1e-12 * abs(trace[-1]))
    assert trace[-1] - trace[0] > 0.1  # the sweeps did move


def _hmmlearn_gaussian(**options):
    hmm = pytest.importorskip("hmmlearn.vhmm")
    return hmm.VariationalGaussianHMM(
        n_components=2, covariance_type="full", startprob_prior=1.0, transmat_prior=1.0,
        means_prior=np.full((2, 1), M0), beta_prior=np.full(2, BETA0),
        dof_prior=np.full(2, 2 * A0), scale_prior=np.full((2, 1, 1), 2 * B0), **options)


def _free_energy_constant(rows):
    """hmmlearn leaves −½ log 2π out of every frame's log-likelihood."""
    return 0.5 * rows * np.log(2 * np.pi)


def test_hmmlearn_bound_at_our_posterior_equals_our_elbo():
    """Our converged q(θ) handed to hmmlearn (Gamma(a, b) of a 1-D precision = its Wishart with
    dof 2a and scale_posterior 2b): one E-step of its VB gives its bound at that q(θ) with the
    optimal q(z), which is our ELBO up to its documented constant."""
    y = np.loadtxt(MODELS / "hmm.csv", skiprows=1)
    post = ppl.load(MODELS / "hmm.vim").infer(MODELS / "hmm.csv", tol=1e-12, max_iter=2000, seed=0)
    peer = _hmmlearn_gaussian(n_iter=1, init_params="", params="")
    alpha_pi, alpha_a = post["pi"].params()["alpha"], post["A"].params()["alpha"]
    peer.startprob_prior_, peer.startprob_posterior_ = np.ones(2), alpha_pi
    peer.transmat_prior_, peer.transmat_posterior_ = np.ones((2, 2)), alpha_a
    peer.means_prior_, peer.beta_prior_ = np.full((2, 1), M0), np.full(2, BETA0)
    peer.dof_prior_, peer.scale_prior_ = np.full(2, 2 * A0), np.full((2, 1, 1), 2 * B0)
    group = post.joint[0]  # q(mu, tau): Normal–Wishart parameters (mean, beta, dof, scale W)
    normal_gamma = group.family.params(group.natural)
    peer.means_posterior_ = normal_gamma["mean"]
    peer.beta_posterior_ = normal_gamma["beta"]
    peer.dof_posterior_ = normal_gamma["dof"]
    peer.scale_posterior_ = np.linalg.inv(normal_gamma["scale"])  # hmmlearn's scale is W⁻¹
    peer.covars_ = peer.scale_posterior_ / peer.dof_posterior_[:, None, None]
    peer.fit(y[:, None])
    assert abs(peer.monitor_.history[0] - _free_energy_constant(len(y)) - post.elbo) < 1e-6


def test_hmmlearn_fixed_point_equals_ours():
    y = np.loadtxt(MODELS / "hmm.csv", skiprows=1)
    post = ppl.load(MODELS / "hmm.vim").infer(MODELS / "hmm.csv", tol=1e-13, max_iter=2000, seed=0)
    peer = _hmmlearn_gaussian(n_iter=5000, tol=1e-12, random_state=0)
    peer.fit(y[:, None])
    assert abs(peer.monitor_.history[-1] - _free_energy_constant(len(y)) - post.elbo) < 1e-6
    order = np.argsort(post["mu"].mean)
    np.testing.assert_allclose(np.sort(peer.means_posterior_[:, 0]), post["mu"].mean[order], rtol=1e-6)


# ---- several sequences ----------------------------------------------------------------------

def _casino():
    frame = pd.read_csv(MODELS / "casino.csv")
    codes = frame["roll"].to_numpy() - 1
    lengths = frame.groupby("session", sort=False).size().to_numpy()
    return frame, codes, lengths


def _hmmlearn_categorical(post, **options):
    hmm = pytest.importorskip("hmmlearn.vhmm")
    peer = hmm.VariationalCategoricalHMM(n_components=2, startprob_prior=1.0, transmat_prior=1.0,
                                         emissionprob_prior=1.0, n_features=6, init_params="", **options)
    peer.startprob_prior_, peer.transmat_prior_, peer.emissionprob_prior_ = np.ones(2), np.ones((2, 2)), np.ones((2, 6))
    peer.startprob_posterior_ = post["pi"].params()["alpha"]
    peer.transmat_posterior_ = post["A"].params()["alpha"]
    peer.emissionprob_posterior_ = post["phi"].params()["alpha"]
    return peer


def test_sessions_restart_the_chain_as_hmmlearn_lengths_do():
    """models/casino.vim (12 sessions in one table): hmmlearn's VB bound with `lengths` at our
    q(θ) equals our ELBO (its categorical bound has no left-out constant), and its VB run from
    there stays at our fixed point."""
    frame, codes, lengths = _casino()
    post = ppl.load(MODELS / "casino.vim").infer(MODELS / "casino.csv", tol=1e-13, max_iter=5000, seed=0)
    assert post.converged
    peer = _hmmlearn_categorical(post, n_iter=1, params="")
    peer.fit(codes[:, None], lengths)
    assert abs(peer.monitor_.history[0] - post.elbo) < 1e-6
    peer = _hmmlearn_categorical(post, n_iter=50, tol=0.0)
    peer.fit(codes[:, None], lengths)
    assert abs(peer.monitor_.history[-1] - post.elbo) < 1e-6
    # the bound is flat here: 50 more sweeps move the counts by ~2e-5 of themselves, the bound by < 1e-9
    np.testing.assert_allclose(peer.transmat_posterior_, post["A"].params()["alpha"], rtol=1e-4)
    # the loaded die is found: one state shows a six about half the time
    sixes = np.sort(post["phi"].mean[:, 5])
    assert sixes[0] < 0.25 < 0.4 < sixes[1]


def test_one_table_of_sessions_equals_each_session_alone():
    """With q(θ) fixed, the chain over the table is the chains over the sessions: marginals of a
    session from the table equal those from a one-session family with the same potentials."""
    frame, codes, lengths = _casino()
    problem = _problem(MODELS / "casino.vim", MODELS / "casino.csv")
    family = problem.families["z"]
    assert family.lengths == tuple(lengths)
    state = initialise(problem, np.random.default_rng(0))
    for name in problem.order:
        _update(problem, state, name, 1.0)
    natural = state.natural["z"]
    start = lengths[:3].sum()
    rows = slice(start, start + lengths[3])
    alone = type(family)(family.k, (int(lengths[3]),))
    np.testing.assert_allclose(state.moments("z")[rows], alone.to_mean(natural[rows]), atol=1e-13)
    assert np.all(natural[np.cumsum(lengths)[:-1], family.k:] == 0)  # no transition into a session start


def test_sessions_must_be_contiguous():
    frame, _, _ = _casino()
    shuffled = pd.concat([frame.iloc[:30], frame.iloc[200:230], frame.iloc[30:200], frame.iloc[230:]])
    with pytest.raises(DataError, match="E422") as error:
        ppl.load(MODELS / "casino.vim").infer(shuffled)
    assert error.value.row == 61 and error.value.column == "session"  # s01 again after s02's 30 rows


# ---- the analyzer ---------------------------------------------------------------------------

HMM = """
const K = 2
data y: real[T]
data g: cat(G)[T]
data w: real[T]
pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  mu[k] ~ Normal(0, 1)
}
z[1] ~ Categorical(pi)
for t in 2..T {
  z[t] ~ Categorical(TRANSITION)
}
for t in 1..T {
  y[t] ~ Normal(EMISSION, 1)
}
"""


def _chains(transition, emission="mu[z[t]]"):
    model = ppl.compile(HMM.replace("TRANSITION", transition).replace("EMISSION", emission))
    return model.check_report()["chains"]


def test_the_analyzer_finds_discrete_chains():
    (chain,) = _chains("A[z[t-1]]")
    assert chain["family"] == "CategoricalChain" and chain["sequences"] is None
    assert chain["factors"] == ["z[1]", "z[t]"]
    (chain,) = _chains("A[z[t-1]]) @sequences(by=g")
    assert chain["sequences"] == "g" and "one chain per sequence of `g`" in chain["reason"]
    assert _chains("pi") == []  # no lag: a mixture, factorised q


def test_sequences_must_name_a_category_column():
    with pytest.raises(ModelError, match="E286"):
        _chains("A[z[t-1]]) @sequences(by=w")


def test_an_emission_reading_two_states_is_refused():
    model = ppl.compile(HMM.replace("TRANSITION", "A[z[t-1]]").replace("EMISSION", "mu[z[t]]") +
                        "for t in 2..T {\n  w[t] ~ Normal(mu[z[t]] - mu[z[t-1]], 1)\n}\n")
    data = pd.DataFrame({"y": np.r_[np.zeros(5), np.ones(5)], "g": ["a"] * 10, "w": np.arange(10.0)})
    with pytest.raises(ModelError, match="E500"):
        model.infer(data)


def test_sequences_elsewhere_is_an_error():
    with pytest.raises(ModelError, match="E286"):
        ppl.compile(HMM.replace("TRANSITION", "A[z[t-1]]").replace("EMISSION", "mu[z[t]]")
                    .replace("mu[k] ~ Normal(0, 1)", "mu[k] ~ Normal(0, 1) @sequences(by=g)")).check_report()


POISSON_BERNOULLI = """
const K = 2
data c: int[T]
data b: bool[T]
pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  lam[k] ~ Gamma(1, 0.1)
  p[k] ~ Beta(1, 1)
}
z[1] ~ Categorical(pi)
for t in 2..T {
  z[t] ~ Categorical(A[z[t-1]])
}
for t in 1..T {
  c[t] ~ Poisson(lam[z[t]])
  b[t] ~ Bernoulli(p[z[t]])
}
"""

MV_NORMAL = """
const K = 2
data x: real[T, D] from (eruptions, waiting)
pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  Lambda[k] ~ Wishart(D, eye(D))
  mu[k] ~ MvNormal(zeros(D), 1.0 * Lambda[k]) @joint
}
z[1] ~ Categorical(pi)
for t in 2..T {
  z[t] ~ Categorical(A[z[t-1]])
}
for t in 1..T {
  x[t] ~ MvNormal(mu[z[t]], Lambda[z[t]])
}
"""


def test_poisson_bernoulli_and_normal_wishart_emissions():
    """Emissions through any conjugate mixture likelihood: Poisson and Bernoulli (a sticky
    two-state chain, rates 2 and 8, probabilities 0.2 and 0.8) and a 2-D Normal–Wishart
    (`@joint`) on both Old Faithful columns; the ELBO never falls."""
    rng = np.random.default_rng(0)
    z = np.zeros(300, int)
    for t in range(1, 300):
        z[t] = z[t - 1] if rng.random() < 0.9 else 1 - z[t - 1]
    data = pd.DataFrame({"c": rng.poisson(np.where(z == 1, 8, 2)), "b": rng.binomial(1, np.where(z == 1, 0.8, 0.2))})
    post = ppl.compile(POISSON_BERNOULLI).infer(data, seed=0, tol=1e-10)
    assert np.all(np.diff(post.trace) >= -1e-9 * abs(post.trace[-1]))
    order = np.argsort(post["lam"].mean)
    np.testing.assert_allclose(post["lam"].mean[order], [2, 8], rtol=0.15)
    np.testing.assert_allclose(post["p"].mean[order], [0.2, 0.8], atol=0.08)
    agree = np.mean(np.argmax(post["z"].mean, axis=1) == np.where(z == 1, order[1], order[0]))
    assert agree > 0.9
    post = ppl.compile(MV_NORMAL).infer(MODELS / "gmm.csv", seed=0, tol=1e-10)
    assert np.all(np.diff(post.trace) >= -1e-9 * abs(post.trace[-1]))
    assert post["A"].mean[np.argmin(post["mu"].mean[:, 0])].max() > 0.9  # short wait → long wait


def test_a_chain_draws_one_state_per_row_and_exports_to_arviz():
    """q(z) of an HMM is drawn as one state per row (FFBS): its dims name the row axis alone, as a
    mean-field Categorical's do, and the ArviZ export holds its draws (a chain's dims once kept the
    probabilities axis of its marginals, and `to_arviz` raised ValueError on every HMM)."""
    post = ppl.load(MODELS / "hmm.vim").infer(MODELS / "hmm.csv", seed=1)
    assert post.dims["z"] == ("T",)
    idata = post.to_arviz(draws=5)
    z = idata.posterior["z"]
    assert z.dims == ("chain", "draw", "T") and z.shape[-1] == 272
    assert set(np.unique(z.values)) <= {0, 1} or set(np.unique(z.values)) <= {1, 2}
