"""Fast paths that skip work when their inputs allow it give the general path's numbers, and the
general path still runs when they do not: the shared transition weights and the evidence spread
of forward–backward (finite entries, or some −∞), a Gaussian's squared error when its mean is
the constant 0 (a GP prior, N(0, s) priors), and the small families' and sums' own shortcuts."""

from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl.families import forward_backward as fb

MODELS = Path(__file__).resolve().parents[1] / "models"
GP = """
data x: real[N]
data y: bool[N]
f ~ MvNormal(zeros(N), cov=rbf(x, 1.0, 1.0))
for n in 1..N {
  y[n] ~ Bernoulli(logistic(f[n]))
}
"""


def _general_weights(pair, chains):
    """`fb._weights` as one expression per case, with no shortcut: every row compared, the finite
    entries' maximum and minimum."""
    shared = pair[np.argmin(chains.starts)]
    same = pair == shared
    same[chains.firsts] = True
    if same.all():
        top = fb._finite_max(shared, axis=None)
        return np.exp(shared - top), top, float(top - np.min(shared, where=np.isfinite(shared), initial=top))
    top = fb._finite_max(pair, axis=(1, 2))
    low = np.min(pair, axis=(1, 2), where=np.isfinite(pair), initial=np.inf)
    return np.exp(pair - top[:, None, None]), top, float(np.max(top - low))


@pytest.mark.parametrize("lengths", [[7], [4, 3, 5]])
@pytest.mark.parametrize("case", ["finite", "zero move", "all -inf", "per row"])
def test_shared_transition_weights_are_the_general_ones(lengths, case):
    chains = fb.Chains.of(lengths)
    rng = np.random.default_rng(len(lengths))
    shared = rng.normal(size=(3, 3))
    if case == "zero move":
        shared[0, 2] = -np.inf
    if case == "all -inf":
        shared[:] = -np.inf
    pair = np.broadcast_to(shared, (sum(lengths), 3, 3)).copy()
    pair[chains.firsts] = rng.normal(size=(len(lengths), 3, 3))  # ignored: no move into a first row
    if case == "per row":
        pair[-1, 1, 1] += 1.0
    got, want = fb._weights(pair, chains), _general_weights(pair, chains)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]


@pytest.mark.parametrize("low", [-3.0, -np.inf])
def test_the_evidence_spread_is_the_finite_entries(low):
    local = np.array([[0.0, -1.0, -2.5], [-0.5, 0.0, low], [0.0, 0.0, 0.0]])
    assert fb._width(local) == -float(np.min(local, where=local > -np.inf, initial=0.0))
    assert fb._width(local) == (2.5 if low == -np.inf else 3.0)


REGRESSION = """
data x: real[N]
data y: real[N]
a ~ Normal(0, 0.1)
b ~ Normal(0, 0.1)
tau ~ Gamma(1, 1)
for n in 1..N {
  y[n] ~ Normal(a + b * x[n], tau)
}
"""


@pytest.mark.parametrize("text", [GP, REGRESSION], ids=["gp prior", "scalar priors"])
def test_a_zero_mean_prior_takes_its_second_moments_as_they_are(text, monkeypatch):
    """A prior whose mean is the constant 0 takes E[(f − 0)(f − 0)ᵀ] as E[f fᵀ] (E[(a − 0)²] as
    E[a²]): the fit is the one of the formula written out (y2 − 2 y1 m1 + m2, y2 − cross − crossᵀ
    + m2 with m = 0), to the bit."""
    import ppl.infer.factors.gaussian as gaussian
    from ppl.infer.coordinate_gaussian import CoordinateGaussian
    # the dense q's path: held by its coordinate sites, a GP's q reads no second moments at all
    monkeypatch.setattr(CoordinateGaussian, "of", classmethod(lambda cls, *args, **kwargs: None))
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(-3, 3, 25))
    y = (rng.random(25) < 1 / (1 + np.exp(-2 * np.sin(x)))).astype(int) if text is GP else 1 + 2 * x + rng.normal(size=25)
    data = {"x": x, "y": y}
    shortcut, taken = gaussian.GaussianFactor._fresh_squared_error, []

    def recorded(self, state):
        taken.append(self._zero_mean)
        return shortcut(self, state)

    monkeypatch.setattr(gaussian.GaussianFactor, "_fresh_squared_error", recorded)
    posterior = ppl.Model(text).infer(data, seed=1)
    assert any(taken)

    def general(self, state):
        self._zero_mean = False
        return shortcut(self, state)

    monkeypatch.setattr(gaussian.GaussianFactor, "_fresh_squared_error", general)
    again = ppl.Model(text).infer(data, seed=1)
    assert again.trace == posterior.trace
    for name in posterior.marginals:
        assert np.array_equal(again[name].mean, posterior[name].mean)
        assert np.array_equal(again[name].sd, posterior[name].sd)


@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_a_chains_expected_output_is_numpys_sum_to_the_bit(k):
    """Σ_k γ_tk E[W_k] column by column (ppl.infer.factors.factorial) is np.sum over the short
    axis of the (T, K) products, which adds its entries first to last."""
    from ppl.infer.factors.factorial import _expected
    rng = np.random.default_rng(k)
    gamma = rng.dirichlet(np.ones(k), size=50)
    values = rng.normal(size=(1, k)) * 10.0 ** np.arange(-4, 4, 8 / k)[:k]
    assert np.array_equal(_expected(gamma, values), np.sum(gamma * values, axis=-1))


def test_one_chain_model_refitted_to_other_data_gives_the_fresh_answers():
    """What a chain keeps between fits (its layout's buffers and views, the blocked pass's
    views, the per-layout sums its checks compare with) follows the data: one compiled HMM fitted
    to data sets of the same length and of another gives, to the bit, what fresh models give."""
    text = (MODELS / "hmm.vim").read_text()
    rng = np.random.default_rng(2)
    base = np.loadtxt(MODELS / "hmm.csv", skiprows=1)
    sets = [base, rng.permutation(base), base[:200] + rng.normal(size=200), base]
    kept = ppl.Model(text)
    for values in sets:
        data = {"y": values}
        again, fresh = kept.infer(data, seed=1), ppl.Model(text).infer(data, seed=1)
        assert again.trace == fresh.trace
        for name in ("z", "pi", "A", "mu", "tau"):
            assert np.array_equal(again[name].mean, fresh[name].mean)


def test_a_normal_gamma_is_solved_as_the_general_normal_wishart_to_the_bit():
    """`NormalWishart(1).moments_and_entropy` on λ's columns gives the general path's moments and
    entropy (params, _to_mean, _log_partition on 1 × 1 matrices), and refuses what it refuses."""
    from ppl.families import normal_wishart as nw
    family = nw.NormalWishart(1)

    def general(nat):
        p = family.params(nat)
        logdet = nw.chol_logdet(nw._factor(p["scale"]))
        mean = family._to_mean(p, logdet)
        return mean, family._log_partition(p, logdet) - (nat * mean).sum(-1) - family.expected_log_base(nat)

    rng = np.random.default_rng(0)
    for trial in range(300):
        shape = [(1,), (3,), (4, 2)][trial % 3]
        nat = family.natural(mean=(rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4))[..., None],
                             beta=np.exp(3 * rng.normal(size=shape)), dof=1 + np.exp(3 * rng.normal(size=shape)),
                             scale=np.exp(4 * rng.normal(size=shape))[..., None, None])
        nat = nat * (1 + 1e-3 * rng.normal(size=nat.shape))
        if trial % 10 == 0:
            nat[..., 2] = 1.0  # −½ W⁻¹ − ½ β m² > 0: W not positive definite
        try:
            want = general(nat)
        except np.linalg.LinAlgError:
            with pytest.raises(np.linalg.LinAlgError):
                family.moments_and_entropy(nat)
            continue
        got = family.moments_and_entropy(nat)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("k", [2, 3, 7])
def test_a_dirichlets_moments_and_entropy_together_are_its_own_apart(k):
    """`Dirichlet.moments_and_entropy` (what a state calls) is `to_mean` and `entropy`, to the bit."""
    from ppl.families import Dirichlet
    family, rng = Dirichlet(k), np.random.default_rng(k)
    for shape in [(1,), (4,), (2, 3)]:
        nat = rng.uniform(-0.99, 30.0, shape + (k,)) * 10.0 ** rng.integers(-3, 3)
        mean, entropy = family.moments_and_entropy(nat)
        assert np.array_equal(mean, family.to_mean(nat)) and np.array_equal(entropy, family.entropy(nat))


@pytest.mark.parametrize("d", [1, 3])
def test_nearest_centres_are_the_written_out_distances(d):
    """k-means' squared distances (ppl.infer.initialise) with one coordinate skip the sum over it:
    the same minima and choices as the expression over all coordinates."""
    from ppl.infer.initialise import _nearest
    rng = np.random.default_rng(d)
    points, centres = rng.normal(size=(500, d)) * 1e3, rng.normal(size=(4, d)) * 1e3
    squares = ((points[:, None, :] - centres[None]) ** 2).sum(-1)
    assert np.array_equal(_nearest(points, centres, np.min), np.min(squares, axis=1))
    assert np.array_equal(_nearest(points, centres, np.argmin), np.argmin(squares, axis=1))


def test_a_constant_priors_message_is_made_once_and_is_the_general_one():
    """`pi ~ Dirichlet(ones(K))` and the Normal–Gamma prior of an @joint group send every sweep
    the same summed message: made once per fit, read-only, equal to the general sum over the
    plate; a factor that reads q (the emission, the transition) sums its own each time."""
    from ppl.infer import build_problem
    from ppl.infer.factors.base import FactorRuntime
    from ppl.infer.initialise import initialise
    model = ppl.load(MODELS / "hmm.vim")
    data = model.bind(MODELS / "hmm.csv")
    problem = build_problem(model.checked, data, model.analyze(data), model.checked.schedule)
    state = initialise(problem, np.random.default_rng(0))
    priors = [f for f in problem.factors if getattr(f, "_constant_prior", False)]  # (chain factors are apart)
    assert {f.target.name for f in priors} == {"pi", "A", "(mu, tau)"}
    for f in priors:
        name = f.target.name
        first, again = f.message(state, name), f.message(state, name)
        assert again is first and not first.flags.writeable
        assert np.array_equal(first, FactorRuntime._summed_message(f, state, name, False))
