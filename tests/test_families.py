"""Table-driven checks of ppl.families against scipy.stats and closed forms.

Every family is exercised on a (3, 2) plate of random valid parameters with
fixed seeds.  References (scipy densities, entropies, ppfs and the moment
formulas below) are written independently of the library code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import digamma, gammaln, logsumexp

from ppl.families import (
    Bernoulli,
    Beta,
    Binomial,
    Categorical,
    Dirichlet,
    Exponential,
    Gamma,
    Multinomial,
    MvNormal,
    Normal,
    Poisson,
    Wishart,
)
from ppl.families.base import diagonal_of
from ppl.families.categorical import indicator_sd

PLATES = (3, 2)
D = 3  # MvNormal / Wishart dimension
K = 4  # Dirichlet / Categorical / Multinomial categories
N_DRAWS = 200_000


def _spd(rng, shape, d):
    a = rng.normal(size=shape + (d, d))
    return a @ np.swapaxes(a, -1, -2) / d + np.eye(d)


def _plate_index():
    return list(np.ndindex(*PLATES))


def _at(params, idx):
    return {k: np.broadcast_to(v, PLATES + np.shape(v)[len(PLATES):])[idx] for k, v in params.items()}


# ------------------------------------------------------------ the table ----


@dataclass
class Case:
    fam: object
    draw: Callable  # rng -> standard params over PLATES
    scipy: Callable  # (fam, params at one plate index, idx) -> frozen scipy dist
    moments: Callable  # (fam, params) -> closed-form E[t(x)], flat layout
    invalidate: Callable  # nat -> nat that must be rejected at plate (0, 0)
    latent: bool = True

    @property
    def id(self):
        return self.fam.name


def _bad(nat, fn):
    nat = np.array(nat, dtype=float)
    nat[0, 0] = fn(nat[0, 0])
    return nat


def _wishart_bad(nat):
    flat = np.array(nat[0, 0])
    flat[:-1] = (-0.5 * np.diag([1.0, -1.0, 1.0])).reshape(-1)  # indefinite S⁻¹
    return _bad(nat, lambda v: flat)


BIN_TRIALS = np.array([[5], [10], [20]])
MULT_TRIALS = np.array([[5, 7], [10, 3], [20, 1]])

CASES = [
    Case(
        Normal(),
        lambda r: {"mean": r.normal(0, 2, PLATES), "precision": np.exp(r.uniform(-1, 1, PLATES))},
        lambda f, p, i: st.norm(p["mean"], 1 / np.sqrt(p["precision"])),
        lambda f, p: np.stack([p["mean"], p["mean"] ** 2 + 1 / p["precision"]], -1),
        lambda nat: _bad(nat, lambda v: np.array([v[0], 0.5])),
    ),
    Case(
        MvNormal(D),
        lambda r: {"mean": r.normal(0, 2, PLATES + (D,)), "precision": _spd(r, PLATES, D)},
        lambda f, p, i: st.multivariate_normal(p["mean"], np.linalg.inv(p["precision"])),
        lambda f, p: _mv_moments(p),
        lambda nat: _bad(nat, lambda v: np.concatenate([v[:D], (0.5 * np.diag([1.0, -2.0, 1.0])).ravel()])),
    ),
    Case(
        Gamma(),
        lambda r: {"shape": r.uniform(0.5, 5, PLATES), "rate": r.uniform(0.5, 3, PLATES)},
        lambda f, p, i: st.gamma(p["shape"], scale=1 / p["rate"]),
        lambda f, p: np.stack([digamma(p["shape"]) - np.log(p["rate"]), p["shape"] / p["rate"]], -1),
        lambda nat: _bad(nat, lambda v: np.array([-1.5, v[1]])),  # a = −0.5
    ),
    Case(
        Wishart(D),
        lambda r: {"dof": D + r.uniform(0.5, 5, PLATES), "scale": _spd(r, PLATES, D)},
        lambda f, p, i: st.wishart(p["dof"], p["scale"]),
        lambda f, p: _wishart_moments(p),
        _wishart_bad,
    ),
    Case(
        Dirichlet(K),
        lambda r: {"alpha": r.uniform(0.5, 5, PLATES + (K,))},
        lambda f, p, i: st.dirichlet(p["alpha"]),
        lambda f, p: digamma(p["alpha"]) - digamma(p["alpha"].sum(-1, keepdims=True)),
        lambda nat: _bad(nat, lambda v: np.r_[-1.0, v[1:]]),  # α₁ = 0
    ),
    Case(
        Beta(),
        lambda r: {"a": r.uniform(0.5, 5, PLATES), "b": r.uniform(0.5, 5, PLATES)},
        lambda f, p, i: st.beta(p["a"], p["b"]),
        lambda f, p: np.stack(
            [digamma(p["a"]) - digamma(p["a"] + p["b"]), digamma(p["b"]) - digamma(p["a"] + p["b"])], -1
        ),
        lambda nat: _bad(nat, lambda v: np.array([-1.2, v[1]])),  # a = −0.2
    ),
    Case(
        Categorical(K),
        lambda r: {"probs": r.dirichlet(np.full(K, 2.0), PLATES)},
        lambda f, p, i: st.rv_discrete(values=(np.arange(K), p["probs"])),
        lambda f, p: p["probs"],
        lambda nat: _bad(nat, lambda v: np.full(K, np.nan)),
    ),
    Case(
        Bernoulli(),
        lambda r: {"p": r.uniform(0.1, 0.9, PLATES)},
        lambda f, p, i: st.bernoulli(p["p"]),
        lambda f, p: p["p"][..., None],
        lambda nat: _bad(nat, lambda v: np.array([np.nan])),
    ),
    Case(
        Binomial(BIN_TRIALS),
        lambda r: {"p": r.uniform(0.1, 0.9, PLATES)},
        lambda f, p, i: st.binom(BIN_TRIALS[i[0], 0], p["p"]),
        lambda f, p: (BIN_TRIALS * p["p"])[..., None],
        lambda nat: _bad(nat, lambda v: np.array([np.inf])),
        latent=False,
    ),
    Case(
        Poisson(),
        lambda r: {"rate": r.uniform(0.5, 10, PLATES)},
        lambda f, p, i: st.poisson(p["rate"]),
        lambda f, p: p["rate"][..., None],
        lambda nat: _bad(nat, lambda v: np.array([np.nan])),
        latent=False,
    ),
    Case(
        Exponential(),
        lambda r: {"rate": r.uniform(0.5, 3, PLATES)},
        lambda f, p, i: st.expon(scale=1 / p["rate"]),
        lambda f, p: 1 / p["rate"][..., None],
        lambda nat: _bad(nat, lambda v: np.array([0.3])),  # rate = −0.3
        latent=False,
    ),
    Case(
        Multinomial(K, MULT_TRIALS),
        lambda r: {"probs": r.dirichlet(np.full(K, 2.0), PLATES)},
        lambda f, p, i: st.multinomial(MULT_TRIALS[i], p["probs"]),
        lambda f, p: MULT_TRIALS[..., None] * p["probs"],
        lambda nat: _bad(nat, lambda v: np.full(K, -np.inf)),
        latent=False,
    ),
]
LATENT = [c for c in CASES if c.latent]
ids = [c.id for c in CASES]


def _mv_moments(p):
    cov = np.linalg.inv(p["precision"])
    m = p["mean"]
    second = cov + m[..., :, None] * m[..., None, :]
    return np.concatenate([m, second.reshape(PLATES + (D * D,))], -1)


def _wishart_moments(p):
    nu, s = p["dof"], p["scale"]
    elogdet = sum(digamma((nu + 1 - j) / 2) for j in range(1, D + 1)) + D * np.log(2)
    elogdet = elogdet + np.linalg.slogdet(s)[1]
    return np.concatenate([(nu[..., None, None] * s).reshape(PLATES + (D * D,)), elogdet[..., None]], -1)


def _setup(case, seed=0):
    rng = np.random.default_rng(seed)
    params = case.draw(rng)
    return params, case.fam.natural(**params), rng


def _logpdf(dist, x):
    return dist.logpmf(x) if hasattr(dist, "logpmf") else dist.logpdf(x)


# ------------------------------------------------------------------ tests ---


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_shapes_and_param_round_trip(case):
    params, nat, rng = _setup(case)
    fam = case.fam
    assert nat.shape == PLATES + (fam.size,)
    assert fam.log_partition(nat).shape == PLATES
    assert fam.to_mean(nat).shape == nat.shape
    x = fam.sample(nat, rng)
    assert x.shape == PLATES + fam.event_shape
    assert fam.stats(x).shape == nat.shape
    assert fam.sample(nat, rng, n=5).shape == (5,) + PLATES + fam.event_shape
    back = fam.params(nat)
    for key, value in params.items():
        np.testing.assert_allclose(back[key], value, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_log_density_matches_scipy(case):
    params, nat, rng = _setup(case, seed=1)
    fam = case.fam
    for draw in range(3):
        x = fam.sample(nat, rng)
        got = fam.log_density(x, nat)
        assert got.shape == PLATES
        for idx in _plate_index():
            ref = _logpdf(case.scipy(fam, _at(params, idx), idx), x[idx])
            if isinstance(fam, Categorical):
                ref = np.log(params["probs"][idx][x[idx]])
            np.testing.assert_allclose(got[idx], ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_to_mean_closed_form(case):
    params, nat, _ = _setup(case, seed=2)
    np.testing.assert_allclose(case.fam.to_mean(nat), case.moments(case.fam, params), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_gradient_of_log_partition_is_mean(case):
    _, nat, _ = _setup(case, seed=3)
    fam = case.fam
    h = 1e-5
    grad = np.empty_like(nat)
    for j in range(fam.size):
        e = np.zeros(fam.size)
        e[j] = h
        grad[..., j] = (fam.log_partition(nat + e) - fam.log_partition(nat - e)) / (2 * h)
    np.testing.assert_allclose(grad, fam.to_mean(nat), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_to_natural_inverts_to_mean(case):
    _, nat, _ = _setup(case, seed=4)
    fam = case.fam
    back = fam.to_natural(fam.to_mean(nat))
    if isinstance(fam, (Categorical, Multinomial)):  # overcomplete: compare log p
        nat = nat - logsumexp(nat, axis=-1, keepdims=True)
    np.testing.assert_allclose(back, nat, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize(
    "fam, nat",
    [
        (Gamma(), Gamma().natural(shape=np.logspace(-2, 3, 40), rate=np.logspace(1, -1, 40))),
        (Beta(), Beta().natural(a=np.logspace(-2, 3, 40), b=np.logspace(3, -2, 40))),
        (Dirichlet(3), Dirichlet(3).natural(alpha=np.exp(np.random.default_rng(5).uniform(-4, 6, (40, 3))))),
        (Wishart(2), Wishart(2).natural(dof=1 + np.logspace(-2, 3, 40), scale=np.eye(2) * [[2.0], [0.5]])),
    ],
    ids=["Gamma", "Beta", "Dirichlet", "Wishart"],
)
def test_newton_inverse_over_wide_parameter_ranges(fam, nat):
    back = fam.to_natural(fam.to_mean(nat))
    for key, value in fam.params(nat).items():
        np.testing.assert_allclose(fam.params(back)[key], value, rtol=1e-8)


@pytest.mark.parametrize("case", LATENT + [CASES[ids.index("Exponential")]], ids=lambda c: c.id)
def test_entropy_matches_scipy(case):
    params, nat, _ = _setup(case, seed=6)
    got = case.fam.entropy(nat)
    assert got.shape == PLATES
    for idx in _plate_index():
        dist = case.scipy(case.fam, _at(params, idx), idx)
        ref = st.entropy(params["probs"][idx]) if isinstance(case.fam, Categorical) else dist.entropy()
        np.testing.assert_allclose(got[idx], ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fam", [Poisson(), Binomial(3), Multinomial(K, 3)], ids=lambda f: f.name)
def test_entropy_refused_without_closed_form(fam):
    with pytest.raises(NotImplementedError, match=fam.name):
        fam.entropy(np.zeros((2, fam.size)))


@pytest.mark.parametrize("case", LATENT, ids=lambda c: c.id)
def test_kl_zero_nonnegative_and_monte_carlo(case):
    fam = case.fam
    _, nat_q, rng = _setup(case, seed=7)
    _, nat_p, _ = _setup(case, seed=8)
    np.testing.assert_allclose(fam.kl(nat_q, nat_q), 0.0, atol=1e-10)
    kl = fam.kl(nat_q, nat_p)
    assert kl.shape == PLATES and np.all(kl > 0)
    x = fam.sample(nat_q, rng, n=50_000)
    ratio = fam.log_density(x, nat_q) - fam.log_density(x, nat_p)
    se = ratio.std(0) / np.sqrt(len(ratio))
    assert np.all(np.abs(ratio.mean(0) - kl) < 5 * se)


def test_kl_normal_closed_form():
    fam = Normal()
    m1, t1, m2, t2 = np.array([0.3, -1.0]), np.array([2.0, 0.5]), np.array([1.0, 0.0]), np.array([0.7, 3.0])
    s1, s2 = 1 / np.sqrt(t1), 1 / np.sqrt(t2)
    ref = np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    got = fam.kl(fam.natural(mean=m1, precision=t1), fam.natural(mean=m2, precision=t2))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_kl_gamma_closed_form():
    fam = Gamma()
    a1, b1, a2, b2 = np.array([2.0, 0.7]), np.array([1.5, 3.0]), np.array([4.0, 1.2]), np.array([0.5, 2.0])
    ref = (
        (a1 - a2) * digamma(a1) - gammaln(a1) + gammaln(a2)
        + a2 * (np.log(b1) - np.log(b2)) + a1 * (b2 - b1) / b1
    )
    got = fam.kl(fam.natural(shape=a1, rate=b1), fam.natural(shape=a2, rate=b2))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_kl_mvnormal_closed_form():
    fam = MvNormal(D)
    rng = np.random.default_rng(9)
    m1, m2 = rng.normal(size=(2, D))
    p1, p2 = _spd(rng, (), D), _spd(rng, (), D)
    c1, c2 = np.linalg.inv(p1), np.linalg.inv(p2)
    ref = 0.5 * (
        np.trace(p2 @ c1) + (m2 - m1) @ p2 @ (m2 - m1) - D
        + np.linalg.slogdet(c2)[1] - np.linalg.slogdet(c1)[1]
    )
    got = fam.kl(fam.natural(mean=m1, precision=p1), fam.natural(mean=m2, precision=p2))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_sample_moments(case):
    _, nat, rng = _setup(case, seed=10)
    fam = case.fam
    x = fam.sample(nat, rng, n=N_DRAWS)
    if isinstance(fam, Categorical):
        x = fam.stats(x)  # one-hot: its mean is the probability vector
    mean, sd = fam.mean(nat), fam.sd(nat)
    assert mean.shape == sd.shape == x.shape[1:]
    assert np.all(np.abs(x.mean(0) - mean) < 4 * sd / np.sqrt(N_DRAWS))
    np.testing.assert_allclose(x.std(0), sd, rtol=0.03)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_mean_and_sd_match_scipy(case):
    params, nat, _ = _setup(case, seed=16)
    fam = case.fam
    mean, sd = fam.mean(nat), fam.sd(nat)
    for idx in _plate_index():
        p = _at(params, idx)
        dist = case.scipy(fam, p, idx)
        if isinstance(fam, MvNormal):
            ref_m, ref_v = dist.mean, np.diag(dist.cov)
        elif isinstance(fam, (Dirichlet, Multinomial)):
            ref_m, ref_v = dist.mean(), dist.var() if isinstance(fam, Dirichlet) else np.diag(dist.cov())
        elif isinstance(fam, Categorical):  # indicator moments of the one-hot vector
            ref_m, ref_v = p["probs"], p["probs"] * (1 - p["probs"])
        else:
            ref_m, ref_v = dist.mean(), dist.var()
        np.testing.assert_allclose(mean[idx], ref_m, rtol=1e-12)
        np.testing.assert_allclose(sd[idx] ** 2, ref_v, rtol=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if c.fam.name not in ("Wishart", "Categorical")],
                         ids=lambda c: c.id)
def test_quantiles_match_scipy_ppf(case):
    params, nat, _ = _setup(case, seed=11)
    fam = case.fam
    qs = [0.05, 0.25, 0.5, 0.9]
    got = fam.quantiles(nat, qs)
    assert got.shape == (len(qs),) + fam.mean(nat).shape
    for idx in _plate_index():
        p = _at(params, idx)
        if isinstance(fam, MvNormal):  # marginals N(m_i, Σ_ii)
            sd = np.sqrt(np.diag(np.linalg.inv(p["precision"])))
            ref = st.norm(p["mean"], sd).ppf(np.array(qs)[:, None])
        elif isinstance(fam, Dirichlet):  # marginals Beta(α_k, α₀ − α_k)
            a = p["alpha"]
            ref = st.beta(a, a.sum() - a).ppf(np.array(qs)[:, None])
        elif isinstance(fam, Multinomial):  # marginals Binomial(n, p_k)
            ref = st.binom(MULT_TRIALS[idx], p["probs"]).ppf(np.array(qs)[:, None])
        else:
            ref = case.scipy(fam, p, idx).ppf(qs)
        np.testing.assert_allclose(got[(slice(None),) + idx], ref, rtol=1e-10, atol=1e-12)


def test_categorical_quantiles_are_codes():
    fam = Categorical(K)
    params, nat, _ = _setup(CASES[ids.index("Categorical")], seed=12)
    qs = [0.01, 0.3, 0.5, 0.99, 1.0]
    got = fam.quantiles(nat, qs)
    assert got.shape == (len(qs),) + PLATES
    for idx in _plate_index():
        ref = st.rv_discrete(values=(np.arange(K), params["probs"][idx])).ppf(qs)
        np.testing.assert_array_equal(got[(slice(None),) + idx], ref)
    exact = fam.natural(probs=np.array([0.25, 0.25, 0.5, 0.0]))  # CDF hits 0.5 exactly
    np.testing.assert_array_equal(fam.quantiles(exact, [0.25, 0.5, 0.75, 1.0]), [0, 1, 2, 2])


def test_wishart_quantiles_diagonal_is_scaled_chi2():
    fam = Wishart(D)
    params, nat, _ = _setup(CASES[ids.index("Wishart")], seed=13)
    qs = [0.1, 0.5, 0.9]
    got = fam.quantiles(nat, qs)
    assert got.shape == (len(qs),) + PLATES + (D, D)
    s_diag = np.diagonal(params["scale"], axis1=-2, axis2=-1)
    ref = s_diag * st.chi2(params["dof"][..., None]).ppf(np.array(qs)[:, None, None, None])
    np.testing.assert_allclose(np.diagonal(got, axis1=-2, axis2=-1), ref, rtol=1e-10)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_valid_accepts_good_and_rejects_bad(case):
    _, nat, _ = _setup(case, seed=14)
    ok = case.fam.valid(nat)
    assert ok.shape == PLATES and ok.all()
    bad = case.fam.valid(case.invalidate(nat))
    assert not bad[0, 0] and bad.sum() == bad.size - 1
    with pytest.raises(ValueError, match=case.fam.name):
        case.fam.check_valid(case.invalidate(nat))


def test_valid_wishart_rejects_small_dof_and_mvnormal_asymmetric_blocks_symmetrised():
    w = Wishart(2)
    assert not w.valid(w.natural(dof=0.9, scale=np.eye(2)))
    assert w.valid(w.natural(dof=1.1, scale=np.eye(2)))
    mv = MvNormal(2)
    nat = mv.natural(mean=[1.0, 2.0], precision=[[2.0, 0.5], [0.5, 1.0]])
    skew = nat + np.array([0, 0, 0, 0.3, -0.3, 0])  # only the symmetric part matters
    np.testing.assert_allclose(mv.to_mean(skew), mv.to_mean(nat), rtol=1e-12)
    assert mv.valid(skew)


def test_helpers_used_by_engine():
    rng = np.random.default_rng(15)
    mv = MvNormal(D)
    p = {"mean": rng.normal(size=(2, D)), "precision": _spd(rng, (2,), D)}
    m, cov = mv.mean_cov(mv.natural(**p))
    np.testing.assert_allclose(m, p["mean"], rtol=1e-12)
    np.testing.assert_allclose(cov, np.linalg.inv(p["precision"]), rtol=1e-12)
    w = Wishart(D)
    nu, s = np.array([4.0, 7.5]), _spd(rng, (2,), D)
    nat = w.natural(dof=nu, scale=s)
    np.testing.assert_allclose(w.expected(nat), nu[:, None, None] * s, rtol=1e-12)
    ref = sum(digamma((nu + 1 - j) / 2) for j in range(1, D + 1)) + D * np.log(2) + np.linalg.slogdet(s)[1]
    np.testing.assert_allclose(w.expected_logdet(nat), ref, rtol=1e-12)
    g = Gamma()
    np.testing.assert_allclose(g.expected_log(g.natural(shape=3.0, rate=2.0)), digamma(3.0) - np.log(2.0))
    dr = Dirichlet(3)
    alpha = np.array([0.5, 2.0, 4.0])
    np.testing.assert_allclose(dr.expected_log(dr.natural(alpha=alpha)), digamma(alpha) - digamma(6.5))


def test_diagonal_of_reads_a_stack_of_diagonal_matrices_and_refuses_one_off_diagonal_entry():
    """One test of 'is this matrix diagonal' for the precision factor, the data-space prior and
    MvNormal.mean_cov: the diagonals of the stack, or None if any matrix has an off-diagonal entry."""
    v = np.array([[1.0, 0.0, -2.0], [3.0, 4.0, 5.0]])  # a zero on a diagonal is still diagonal
    stack = v[:, :, None] * np.eye(3)
    np.testing.assert_array_equal(diagonal_of(stack), v)
    assert diagonal_of(stack).flags.writeable  # a new array, not numpy's read-only view
    stack[1, 0, 2] = 1e-300
    assert diagonal_of(stack) is None
    assert diagonal_of(np.zeros((2, 2))) is not None


def test_categorical_zero_probability_category_is_handled():
    fam = Categorical(3)
    nat = fam.natural(probs=np.array([0.5, 0.0, 0.5]))
    with np.errstate(all="raise"):
        np.testing.assert_allclose(fam.log_density(np.array(2), nat), np.log(0.5))
        assert fam.log_density(np.array(1), nat) == -np.inf
        np.testing.assert_allclose(fam.entropy(nat), np.log(2))
        np.testing.assert_allclose(fam.kl(nat, fam.natural(probs=np.full(3, 1 / 3))), np.log(3) - np.log(2))
    assert fam.valid(nat)
    assert not np.any(fam.sample(nat, np.random.default_rng(0), n=10_000) == 1)


def test_a_near_certain_category_keeps_the_sd_of_its_indicator():
    """p = (1 − 1e-17, 1e-17) is stored as (1, 1e-17): √(p(1 − p)) would give the first category sd
    0; summing the other categories gives √1e-17 for both, as the exact indicator sds are."""
    p = np.array([[1.0, 1e-17, 0.0], [0.2, 0.3, 0.5]])
    sd = indicator_sd(p)
    np.testing.assert_allclose(sd[0], [np.sqrt(1e-17), np.sqrt(1e-17), 0.0], rtol=1e-15)
    np.testing.assert_allclose(sd[1], np.sqrt(p[1] * (1 - p[1])), rtol=1e-15)
    fam = Categorical(3)
    np.testing.assert_allclose(fam.sd(fam.natural(probs=p[1])), sd[1], rtol=1e-15)



@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_few_categories_sum_the_others_as_the_cumulative_sums_do(k):
    """`indicator_sd` adds a few categories' columns one at a time: the numbers of the cumulative
    sums (left and right) it takes for many, to the bit, on rows with zeros and near-certain ones."""
    from ppl.families.categorical import _others, _others_by_columns
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.full(k, 0.3), size=(40, 3)) * 10.0 ** rng.integers(-3, 1, size=(40, 3, 1))
    p[0, 0] = 0.0
    p[1, 0, :2] = (1.0, 1e-17)
    assert np.array_equal(_others_by_columns(p), _others(p))
    assert np.array_equal(_others_by_columns(p[0]), _others(p[0]))  # one row of (k,) too


def test_a_chain_is_valid_by_one_test_when_every_potential_is_finite():
    """`CategoricalChain.valid` answers all-True from one test when λ is finite; with NaN, +∞ or a
    row of −∞ unaries it gives the row tests' answers."""
    from ppl.families import CategoricalChain
    family = CategoricalChain(3, (4, 2))
    nat = np.random.default_rng(0).normal(size=(6, 12))
    assert family.valid(nat).tolist() == [True] * 6
    nat[1, 5], nat[2, 0], nat[3, :3], nat[4, 4] = np.nan, np.inf, -np.inf, -np.inf
    assert family.valid(nat).tolist() == [True, False, False, False, True, True]


def test_binomial_trials_broadcast_and_validation():
    fam = Binomial(BIN_TRIALS)
    nat = fam.natural(p=np.full((1, 2), 0.3))
    assert fam.log_partition(nat).shape == (3, 2)
    np.testing.assert_allclose(fam.mean(nat), BIN_TRIALS * 0.3 * np.ones((1, 2)))
    assert fam.sample(nat, np.random.default_rng(0), n=4).shape == (4, 3, 2)
    with pytest.raises(ValueError, match="Binomial"):
        Binomial([2.5])
    with pytest.raises(ValueError, match="Multinomial"):
        Multinomial(K, -1)


def test_families_are_frozen():
    fam = MvNormal(2)
    with pytest.raises(AttributeError):
        fam.dim = 3
    assert MvNormal(2) == MvNormal(2) and hash(Gamma()) == hash(Gamma())
    with pytest.raises(ValueError):
        Binomial(BIN_TRIALS).trials[0, 0] = 3
