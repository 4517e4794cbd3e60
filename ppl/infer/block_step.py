"""The searched step of a Gaussian block with a Gamma member (ppl.infer.factors.block_log).

Its messages are natural gradients, not conjugate messages: the full step λ ← Σ m is a Newton
step on the ELBO, which overshoots far from the optimum and may leave J indefinite. The block's
own part of the ELBO (the terms of the factors that read it, and its entropy; nothing else
changes with λ) is evaluated after the step; while it fell or λ is not a valid Gaussian, the step
is halved. λ + β(Σm − λ) is the natural-gradient direction, an ascent direction, so a small
enough β rises; below SMALLEST the block keeps its λ (at the fixed point the step is zero).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.state import NumericalBreakdown

SMALLEST = 2.0 ** -12
STUCK = 10  # refused steps in a row that stop a stochastic run (CVI's refuses at most 2 running on models/)


def searched_step(problem, state, name: str, total: np.ndarray, damping: float, judged: bool = True) -> float:
    """Set λ of block `name` to the largest λ + β(total − λ), β = damping·2^−k, whose objective
    is no lower; returns β (0 when none is). `judged=False` for messages that are not the natural
    gradient of the objective (Laplace's, derivatives at the point): the largest valid step, whose
    objective need not rise (judged by it, Laplace stalled short of its fixed point)."""
    old = state.natural[name]
    before = local_objective(problem, state, name) if judged else -np.inf
    family = state.families[name]
    step = damping
    while step >= SMALLEST:
        trial = old + step * (total - old)
        if np.all(family.valid(trial)):
            state.set(name, trial)
            try:
                value = local_objective(problem, state, name)
            except (NumericalBreakdown, FloatingPointError):
                value = -np.inf
            if value >= before - 1e-12 * max(1.0, abs(before)) and (judged or np.isfinite(value)):
                return step
        step /= 2
    state.set(name, old)
    return 0.0


def local_objective(problem, state, name: str) -> float:
    """The terms of the ELBO that depend on q(`name`)."""
    value = sum(f.elbo(state) for f in problem.neighbours[name]) + state.entropy(name)
    return value if np.isfinite(value) else -np.inf
