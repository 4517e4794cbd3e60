"""SQUAREM's choice of steps (ppl.infer.accelerate): no step where the plain sweeps already
contract fast, since the sweep from an extrapolated point pays a fresh evaluation of its messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

import ppl
from ppl import families as fam
from ppl.infer.accelerate import NEAR_PLAIN, Squarem

LOGISTIC = """
data X: real[N, D] from x1..xD
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
"""


class _Problem:
    families, pure_vmp = {"x": fam.Normal()}, True


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
