"""Anderson acceleration (ppl.infer.anderson, `accelerate="anderson"`) and the one-increment stop
of the fixed-point rule (ppl.infer.convergence).

Anderson type II on a linear map is GMRES in disguise: with memory at least the dimension it
lands on the exact fixed point after dimension + 1 extrapolations. On models it must keep
SQUAREM's guarantees: the VMP trace never falls, the fixed point is the plain run's.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl import families as fam
from ppl.diagnostics import OptionError
from ppl.infer import Options
from ppl.infer.anderson import Anderson
from ppl.infer.convergence import Monitor

MODELS = Path(__file__).resolve().parents[1] / "models"


def fit(name, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ppl.load(MODELS / f"{name}.vim").infer(str(MODELS / f"{name}.csv"), seed=1, **options)


class _Vector:
    """A problem with one latent 'x' whose every λ is valid (a stand-in for the engine's)."""
    latent, local = ["x"], ()
    families = {"x": type("Free", (), {"valid": staticmethod(lambda nat: np.ones(len(nat), bool))})()}


class _State:
    def __init__(self, x):
        self.natural, self.factored = {"x": x}, {"x": None}

    def set(self, name, nat, factored=None):
        self.natural[name], self.factored[name] = nat, factored

    def keep(self, names, bare=()):
        return {n: self.natural[n] for n in names}

    def restore(self, kept):
        self.natural.update(kept)


def test_anderson_on_a_linear_map_is_exact_after_dimension_plus_one_steps():
    """F(x) = A x + b in R³ with spectral radius 0.95 (plain iteration: 0.95^k). Type-II Anderson
    with memory 3 is GMRES on (I − A)x = b: the sweep after the fourth extrapolation lands on
    x* = (I − A)⁻¹b. The objective is fed as always rising, so every step is kept, and the step
    bound is lifted (it is a safeguard, tested on the models)."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    a = q @ np.diag([0.95, -0.5, 0.3]) @ q.T + 0.05 * rng.normal(size=(3, 3))
    b = rng.normal(size=3)
    fixed = np.linalg.solve(np.eye(3) - a, b)
    state, accel = _State(np.zeros((3, 1))), Anderson(_Vector(), memory=3)
    accel.step_max = np.inf
    errors = []
    for sweep in range(8):
        accel.before_sweep(state)
        state.set("x", a @ state.natural["x"] + b[:, None])
        assert accel.after_sweep(state, float(sweep)) == (float(sweep), True)
        errors.append(np.max(np.abs(state.natural["x"][:, 0] - fixed)))
    assert accel.accepted == 6  # every sweep from the third on started from an extrapolated point
    assert errors[5] < 1e-10 * errors[0]  # sweeps 1, 2 plain; 3 to 6 extrapolated
    assert errors[1] > 0.5 * errors[0]  # where the plain iteration is still far


def test_anderson_reverts_a_step_that_lowers_the_objective():
    """Two plain sweeps of x ↦ x/2 + 1, then one from an extrapolated point whose objective (fed
    here) fell: the state goes back to the last plain point and the trace repeats its value."""
    state, accel = _State(np.zeros((1, 1))), Anderson(_Vector())
    for value in (1.0, 2.0, 1.5):
        accel.before_sweep(state)
        plain = accel.fallback[0]["x"] if accel.fallback else None
        state.set("x", 0.5 * state.natural["x"] + 1.0)
        recorded = accel.after_sweep(state, value)
    assert recorded == (2.0, False) and accel.rejected == 1 and accel.accepted == 0
    assert plain is not None and state.natural["x"] is plain
    assert len(accel.pairs) == 1  # the memory restarts from that point


def test_anderson_pulls_a_proposal_back_into_the_parameter_space():
    """A Gamma rate falling ever faster: the full Anderson step would make it negative; it is
    halved towards the plain point until the λ is valid."""
    class Problem:
        latent, local, families = ["t"], (), {"t": fam.Gamma()}

    accel = Anderson(Problem(), memory=2)
    rates = [1.0, 0.6, 0.3, 0.1]
    for before, after in zip(rates[:-1], rates[1:]):
        accel.pairs.append((np.array([0.0, -before]), np.array([0.0, -after])))
    accel.layout = [("t", (1, 2))]
    accel.pairs = accel.pairs[-3:]
    point = accel._extrapolate(np.array([0.0, -0.1]))
    assert np.all(fam.Gamma().valid(point.reshape(1, 2)))
    assert -0.1 < point[1] < 0  # further along the fall, still a positive rate


def test_anderson_never_proposes_the_start_of_the_last_sweep():
    """A diverging 1-D pair (residuals 1 then 1.5): the least-squares step goes back by 3 residuals,
    and its bound (one residual) would land exactly on the last sweep's start, a sweep that repeats
    the last one (no change: the stopping rule would take it for a fixed point). No step then."""
    accel = Anderson(_Vector())
    accel.layout = [("x", (1, 1))]
    accel.pairs = [(np.array([0.0]), np.array([1.0])), (np.array([1.0]), np.array([2.5]))]
    assert accel._extrapolate(np.array([2.5])) is None
    accel.step_max = np.inf
    np.testing.assert_allclose(accel._extrapolate(np.array([2.5])), [-2.0])  # 2.5 − 3 × 1.5


@pytest.mark.parametrize("name", ["eight_schools", "gmm", "latent_class", "hmm"])
def test_anderson_vmp_never_decreases_and_reaches_the_plain_fixed_point(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ElboDecreaseWarning would fail the test
        fast = ppl.load(MODELS / f"{name}.vim").infer(str(MODELS / f"{name}.csv"), seed=1, accelerate="anderson")
    plain = fit(name, accelerate=False)
    assert np.all(np.diff(fast.trace) >= -1e-9 * abs(fast.elbo))
    assert fast.converged and plain.converged
    assert abs(fast.elbo - plain.elbo) < 1e-6
    assert fast.iterations < plain.iterations


def test_an_unknown_accelerator_is_refused():
    with pytest.raises(OptionError) as error:
        Options(accelerate="fast").validate()
    assert error.value.code == "E710" and "anderson" in str(error.value)
    with pytest.raises(OptionError, match="E710|accelerate"):
        fit("beta_bernoulli", accelerate="Anderson")


class _OneNormal:
    pure_vmp, stochastic, families = True, False, {"x": fam.Normal()}


def _normal(mean):
    return type("S", (), {"natural": {"x": fam.Normal().natural(mean=np.array([mean]), precision=np.array([1.0]))}})()


def test_one_increment_proves_the_fixed_point_when_it_is_below_tol_times_one_minus_the_cap():
    """After the second sweep there is no rate to estimate: the slowest allowed (0.999) is assumed,
    so an increment of 1e-10 with no mean moving stops the run, one of 1e-8 does not."""
    stop = Monitor(_OneNormal(), tol=1e-6, mean_tol=1e-5)
    assert not stop.done([-5.0], _normal(0.0))
    assert stop.done([-5.0, -5.0 + 1e-10], _normal(0.0))
    wait = Monitor(_OneNormal(), tol=1e-6, mean_tol=1e-5)
    wait.done([-5.0], _normal(0.0))
    assert not wait.done([-5.0, -5.0 + 1e-8], _normal(0.0))


def test_a_model_exact_in_one_sweep_stops_after_two():
    """beta_bernoulli's first sweep is its exact posterior; the second only confirms it."""
    post = fit("beta_bernoulli", accelerate=False)
    assert post.converged and post.iterations == 2
    assert post.trace[1] == post.trace[0]


def test_the_command_line_asks_for_anderson_as_python_does(tmp_path):
    from ppl.cli import main

    data = str(MODELS / "latent_class.csv")
    args = ["infer", str(MODELS / "latent_class.vim"), data, "--seed", "1", "--quiet", "--output"]
    sweeps = {}
    for extra in (["--accelerator", "anderson"], ["--no-accelerate", "--accelerator", "anderson"]):
        out = tmp_path / f"{extra[0][2:]}.json"
        assert main(args + [str(out)] + extra) == 0
        sweeps[extra[0]] = ppl.Posterior.load(out).iterations
    assert sweeps["--accelerator"] == fit("latent_class", accelerate="anderson").iterations
    assert sweeps["--no-accelerate"] == fit("latent_class", accelerate=False).iterations
    assert sweeps["--accelerator"] < sweeps["--no-accelerate"]
