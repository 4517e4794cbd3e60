"""SQUAREM's choice of steps (ppl.infer.accelerate): no step where the plain sweeps already
contract fast, since the sweep from an extrapolated point pays a fresh evaluation of its messages;
a large local is refitted to the moved globals, not extrapolated, and the guarantees hold.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

import ppl
from ppl import families as fam
from ppl.infer import accelerate
from ppl.infer.accelerate import NEAR_PLAIN, Squarem
from ppl.infer.engine import ElboDecreaseWarning
from ppl.infer.low_rank import KernelGaussian

MODELS = Path(__file__).resolve().parents[1] / "models"

LOGISTIC = """
data X: real[N, D] from x1..xD
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
"""


class _Problem:
    families, pure_vmp, latent, local = {"x": fam.Normal()}, True, ("x",), ()


class _NotVmp(_Problem):
    pure_vmp = False  # no floor α ≤ −1: an oscillating mode gets −1 < α < 0


def _linear_mode(rho: float) -> list[dict]:
    """Three plain sweeps of a Normal's mean contracting to 0 at rate ρ, its precision fixed."""
    return [{"x": fam.Normal().natural(mean=np.array([rho ** k]), precision=np.array([1.0]))} for k in range(3)]


@pytest.mark.parametrize("rho", [0.01, 0.03, 0.045])
def test_no_step_where_the_sweeps_contract_faster_than_one_in_twenty(rho):
    """α = −1/(1 − ρ) is within NEAR_PLAIN below −1: the next sweep starts from λ2 itself."""
    assert abs(1 / (1 - rho) - 1) < NEAR_PLAIN
    step = Squarem(_Problem())
    step.step_max = 64.0
    assert step._extrapolate(*_linear_mode(rho)) is None


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9])
def test_a_slower_mode_is_extrapolated_onto_its_fixed_point(rho):
    step = Squarem(_Problem())
    step.step_max = 64.0
    proposal = step._extrapolate(*_linear_mode(rho))
    assert fam.Normal().mean(proposal["x"]) == pytest.approx([0.0], abs=1e-12)


def test_a_fast_oscillating_mode_keeps_its_step():
    """ρ = −0.03 (α = −0.971): the plain sweeps overshoot; the step lands on the fixed point."""
    step = Squarem(_NotVmp())
    proposal = step._extrapolate(*_linear_mode(-0.03))
    assert fam.Normal().mean(proposal["x"]) == pytest.approx([0.0], abs=1e-12)


def test_fast_ncvmp_takes_the_plain_path_to_the_plain_fixed_point():
    """Logistic regression with many rows per weight (covtype's shape, smaller): NC-VMP contracts
    at ρ ≈ 0.04 by its fifth sweep (α = −1.042). The default run proposes no step there, so it is the plain run
    sweep for sweep (when it took that step, its trace differed from the plain one, and the sweep
    from λ' paid one more quadrature pass over every row, for the same count of sweeps)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, 10)) / np.sqrt(10)
    x[:, 0] = 1.0
    y = (rng.random(len(x)) < expit(x @ (2.0 * rng.normal(size=10)))).astype(int)
    model, data = ppl.compile(LOGISTIC), {"X": x, "y": y}
    default = model.infer(data, seed=0, methods={"y": "ncvmp"})
    plain = model.infer(data, seed=0, methods={"y": "ncvmp"}, accelerate=False)
    assert default.converged and plain.converged
    assert default.trace == plain.trace
    assert default.convergence.elbo_gap <= 1e-6 and default.convergence.mean_change <= 1e-5



def _accelerated(name: str, monkeypatch):
    """The default run of models/`name` with the Squarem it made."""
    made = []
    monkeypatch.setattr(accelerate, "Squarem", lambda *a, **k: made.append(Squarem(*a, **k)) or made[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NC-VMP's damping notes
        warnings.simplefilter("error", ElboDecreaseWarning)
        fast = ppl.load(MODELS / f"{name}.vim").infer(str(MODELS / f"{name}.csv"), seed=1)
    return fast, made[0]


@pytest.mark.parametrize("name", ["gmm", "latent_class", "casino", "eight_schools"])
def test_refitted_locals_keep_vmp_ascent_and_the_plain_fixed_point(name, monkeypatch):
    """Every local refitted to the moved globals instead of extrapolated (as a large one is):
    under VMP the trace never decreases, and the run reaches the plain run's fixed point in
    fewer sweeps."""
    monkeypatch.setattr(accelerate, "SMALL_LOCAL", 0)
    fast, squarem = _accelerated(name, monkeypatch)
    plain = ppl.load(MODELS / f"{name}.vim").infer(str(MODELS / f"{name}.csv"), seed=1, accelerate=False)
    problem = squarem.problem
    assert problem.local and squarem.names == [n for n in problem.latent if n not in problem.local]
    assert squarem.accepted > 0
    assert np.all(np.diff(fast.trace) >= -1e-9 * abs(fast.elbo))
    assert fast.converged and plain.converged and fast.iterations < plain.iterations
    assert abs(fast.elbo - plain.elbo) < 1e-6
    for v in plain.marginals:
        sd = np.maximum(np.asarray(plain[v].sd, dtype=float), 1e-6)
        assert np.max(np.abs(np.asarray(fast[v].mean) - np.asarray(plain[v].mean)) / sd) < 1e-3


def test_a_small_local_is_extrapolated_with_the_globals(monkeypatch):
    _, squarem = _accelerated("gmm", monkeypatch)
    assert squarem.problem.local == ("z",) and squarem.names == list(squarem.problem.latent)


def test_a_gaussian_held_in_data_space_is_extrapolated_on_its_sites(monkeypatch):
    """logistic_wide (D = 400 weights on N = 40 rows, Woodbury): a step on the sites (c, h, τ)
    is the step on λ, formed densely here to compare; the run keeps q in data space and reaches
    the plain fixed point in fewer sweeps."""
    seen = []
    extrapolate = Squarem._extrapolate
    monkeypatch.setattr(Squarem, "_extrapolate", lambda self, *x: seen.append(x) or extrapolate(self, *x))
    fast, squarem = _accelerated("logistic_wide", monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NC-VMP's damping notes
        plain = ppl.load(MODELS / "logistic_wide.vim").infer(str(MODELS / "logistic_wide.csv"), seed=1,
                                                             accelerate=False)
    assert squarem.accepted > 0 and fast.iterations < plain.iterations
    assert fast.elbo >= plain.elbo - 1e-6
    for v in plain.marginals:
        assert np.max(np.abs(np.asarray(fast[v].mean) - np.asarray(plain[v].mean)) / np.asarray(plain[v].sd)) < 1e-3
    x0, x1, x2 = (x["w"] for x in seen[0])
    assert all(isinstance(x, KernelGaussian) for x in (x0, x1, x2))
    family = squarem.problem.families["w"]
    for alpha in (-1.0, -1.3):
        sites = accelerate._proposal(*(accelerate._vector(x) for x in (x0, x1, x2)), alpha)
        dense = accelerate._proposal(x0.natural(), x1.natural(), x2.natural(), alpha)
        np.testing.assert_allclose(accelerate._solved(family, x2, sites).natural(), dense, rtol=1e-9, atol=1e-9)


def test_arrays_of_one_chunk_step_as_chunked_ones(monkeypatch):
    """`_chunks` hands arrays of at most CHUNK entries over whole, without a generator: the proposal
    is the chunked one to the bit, the norms and distances the same up to the order of the sums."""
    rng = np.random.default_rng(3)
    triple = tuple(rng.normal(size=(6, 5)) for _ in range(3))
    whole = (accelerate._proposal(*triple, -1.7), accelerate._step_norms([triple]),
             accelerate._distance([triple[:2]]))
    monkeypatch.setattr(accelerate, "CHUNK", 7)  # 30 entries: five chunks, the last partial
    chunked = (accelerate._proposal(*triple, -1.7), accelerate._step_norms([triple]),
               accelerate._distance([triple[:2]]))
    np.testing.assert_array_equal(whole[0], chunked[0])
    np.testing.assert_allclose(whole[1], chunked[1], rtol=1e-13)
    np.testing.assert_allclose(whole[2], chunked[2], rtol=1e-13)
    assert [len(c[0]) for c in accelerate._chunks(*triple)] == [7, 7, 7, 7, 2]
