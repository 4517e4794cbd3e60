"""Doubly stochastic CVI on a conjugate local/global model is SVI (Khan & Lin §5, Alg. 2 with a
minibatch; digest §4 item 4): `schedule cvi(minibatch=B, step=β, kappa=κ)` moves each global by

    λ ← (1 − ρ_t) λ + ρ_t (η + (N/B) Σ_{n∈B} η̃_n),     ρ_t = β·t^−κ,

where η̃_n is group n's exact conjugate message after its local E-step. Its λ trajectory equals
`schedule svi(batch=B, tau=0, ramp=0)` with the same seeds (β = 1), and a numpy recursion of
the equation above written for a Normal hierarchy with an unknown noise precision.
"""

import numpy as np
import pytest

import ppl
from ppl.diagnostics import ModelError
from ppl.infer.build import build_problem
from ppl.infer.schedule.svi import SVI, Minibatches
from ppl.lang.schedule import parse_schedule

HIERARCHY = """
data g: cat(G)[N]
data y: real[N]
mu ~ Normal(0, 0.01)
s ~ Gamma(2.0, 1.0)
a: real[G] ~ Normal(mu, 1.0)
y ~ Normal(a[g], s)
"""
GROUPS, ROWS, BATCH, SEED = 12, 90, 4, 7
START = {"mu": np.array([[1.0, -0.5]]), "s": np.array([[2.0, -1.5]])}  # q(mu) = N(1, 1), q(s) = Gamma(3, 1.5)


def data():
    rng = np.random.default_rng(0)
    g = rng.integers(0, GROUPS, ROWS)
    return {"g": [f"g{k:02d}" for k in g], "y": rng.normal(2, 1, GROUPS)[g] + 0.7 * rng.normal(size=ROWS)}


def trajectory(schedule: str, steps: int = 25) -> list:
    """λ of (mu, s) after each step of the schedule, from START, with the run's seed."""
    model = ppl.compile(HIERARCHY)
    dataset = model.bind(data())
    problem = build_problem(model.checked, dataset, model.analyze(dataset), parse_schedule(schedule))
    svi = SVI(problem, np.random.default_rng(SEED))
    svi.globals = {n: v.copy() for n, v in START.items()}
    out = []
    for t in range(1, steps + 1):
        svi.step(t)
        out.append(np.concatenate([svi.globals["mu"].ravel(), svi.globals["s"].ravel()]))
    return out


def reference(step: float, kappa: float, steps: int = 25) -> list:
    """The equation of the module docstring by hand: the same minibatches (the run's seed), each
    group's q(a_j) from its exact conditional given E[mu] and E[s], then mu and s."""
    table = data()
    levels = sorted(set(table["g"]))
    g, y = np.array([levels.index(v) for v in table["g"]]), table["y"]
    batches = Minibatches(GROUPS, BATCH, np.random.default_rng(SEED).spawn(2)[0])
    mu, s = START["mu"][0].copy(), START["s"][0].copy()
    out = []
    for t in range(1, steps + 1):
        chosen = batches.next()
        e_mu, e_s = mu[0] / (-2 * mu[1]), (s[0] + 1) / -s[1]
        rows = np.isin(g, chosen)
        precision = 1.0 + e_s * np.bincount(g[rows], minlength=GROUPS)[chosen]  # local E-step
        mean = (e_mu + e_s * np.bincount(g[rows], y[rows], minlength=GROUPS)[chosen]) / precision
        scale, rho = GROUPS / BATCH, min(1.0, step * t ** -kappa)
        mu_target = np.array([0.0, -0.005]) + scale * np.array([mean.sum(), -0.5 * len(chosen)])
        group_of_row = np.searchsorted(np.sort(chosen), g[rows])
        order = np.argsort(chosen)
        m_row, v_row = mean[order][group_of_row], (1 / precision)[order][group_of_row]
        s_target = np.array([1.0, -1.0]) + scale * np.array(
            [0.5 * rows.sum(), -0.5 * np.sum((y[rows] - m_row) ** 2 + v_row)])
        mu, s = (1 - rho) * mu + rho * mu_target, (1 - rho) * s + rho * s_target
        out.append(np.concatenate([mu, s]))
    return out


def test_doubly_stochastic_cvi_is_svi_with_the_same_seeds_and_steps():
    cvi = trajectory(f"cvi(minibatch={BATCH}, kappa=0.6)")
    svi = trajectory(f"svi(batch={BATCH}, tau=0, kappa=0.6, ramp=0)")
    np.testing.assert_allclose(cvi, svi, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(cvi, reference(1.0, 0.6), rtol=1e-10, atol=1e-10)
    # svi's own step (1 + t)^-0.7 with the N_t ramp is another trajectory
    assert np.max(np.abs(np.subtract(trajectory(f"svi(batch={BATCH})"), cvi))) > 1e-3


@pytest.mark.parametrize("step, kappa", [(0.7, 0.6), (0.5, 0.0)])
def test_doubly_stochastic_cvi_follows_the_scaled_damped_conjugate_step(step, kappa):
    cvi = trajectory(f"cvi(minibatch={BATCH}, step={step}, kappa={kappa})")
    np.testing.assert_allclose(cvi, reference(step, kappa), rtol=1e-10, atol=1e-10)
    # a different step, or no N/B scaling, is a different recursion: the identity can fail
    assert np.max(np.abs(np.subtract(reference(step * 0.9, kappa), cvi))) > 1e-3


def test_the_reference_fails_without_the_scale_or_the_local_e_step(monkeypatch):
    """The two other ingredients of the identity, changed one at a time in the run itself."""
    from ppl.infer.schedule import svi as svi_module
    expected = reference(0.7, 0.6)
    original = svi_module.SVI.m_step
    monkeypatch.setattr(svi_module.SVI, "m_step", lambda self, p, s, scale, rho, draws=None, fused=None:
                        original(self, p, s, 1.0, rho, draws, fused))
    assert np.max(np.abs(np.subtract(trajectory(f"cvi(minibatch={BATCH}, step=0.7)"), expected))) > 1e-3
    monkeypatch.setattr(svi_module.SVI, "m_step", original)
    monkeypatch.setattr(svi_module.SVI, "e_step", lambda self, problem, state, estep="vmp": 0)
    assert np.max(np.abs(np.subtract(trajectory(f"cvi(minibatch={BATCH}, step=0.7)"), expected))) > 1e-3


def test_a_cvi_schedule_runs_end_to_end_like_its_svi_twin():
    text = HIERARCHY
    cvi = ppl.compile(text).infer(data(), seed=3, schedule=f"cvi(minibatch={BATCH}, kappa=0.8)", max_iter=60)
    svi = ppl.compile(text).infer(data(), seed=3, schedule=f"svi(batch={BATCH}, tau=0, kappa=0.8, ramp=0)",
                                  max_iter=60)
    for name in ("mu", "s", "a"):
        np.testing.assert_allclose(cvi[name].natural, svi[name].natural, rtol=1e-10, atol=1e-10)
    assert cvi.elbo == pytest.approx(svi.elbo, rel=1e-12)
    assert any(note.startswith("cvi:") for note in cvi.notes)


@pytest.mark.parametrize("text, code", [
    ("cvi(batch=4)", "E292"), ("cvi(step=0.5)", "E294"), ("cvi(minibatch=4, kappa=1.5)", "E293"),
    ("cvi(minibatch=4, step=0)", "E293"), ("cvi(minibatch=0)", "E293"),
])
def test_cvi_schedule_options_are_checked(text, code):
    with pytest.raises(ModelError) as info:
        parse_schedule(text)
    assert info.value.code == code


def test_a_row_minibatch_under_a_stochastic_schedule_is_e600():
    text = HIERARCHY.replace("data y: real[N]", "data y: bool[N]").replace("s ~ Gamma(2.0, 1.0)\n", "").replace(
        "y ~ Normal(a[g], s)", "y ~ Bernoulli(logistic(a[g])) @cvi(minibatch=5)")
    table = data()
    table["y"] = (table["y"] > 2).astype(int)
    with pytest.raises(ModelError) as info:
        ppl.compile(text).infer(table, seed=0, schedule=f"cvi(minibatch={BATCH})")
    assert info.value.code == "E600" and info.value.span.line == 6
    assert "schedule cvi(minibatch=4)" in info.value.hint
