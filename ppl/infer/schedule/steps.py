"""The two halves of every schedule's step, on a `Problem` bound to the groups the step visits:

- E-step: sweep the local variables, globals fixed, until the largest change of a local mean
  parameter is below a tolerance (the per-document inner loop of Blei et al. 2003 and of every
  online LDA);
- M-step: each global takes λ ← (1 − ρ) λ + ρ (Σ prior messages + scale · Σ data messages),
  with scale = N/|B| for a minibatch (Hoffman et al. 2013, eq. 13) and 1 in batch.

Batch VMP is the M-step with ρ = 1 and scale 1 followed by the E-step over every group.
"""

from __future__ import annotations

import numpy as np

from ppl.infer.factors.gamma_cvi import shrink_until_valid
from ppl.infer.update import update


def batch_sweep(problem, state, step) -> int:
    """One sweep of batch VMP: every global once (M-step, ρ = 1, scale 1), then the local blocks
    of every group to convergence (E-step); `step(name)` is each update's damping. Returns the
    E-step's sweeps."""
    if problem.kernel is not None and step(problem.order[0]) == 1.0:  # a kernel's problem has no
        problem.kernel.sweep(state)  # per-variable steps: one damping for all. The same updates, fused
        return 1
    for name in problem.order:
        if name not in problem.local:
            update(problem, state, name, step(name))
    return fit_locals(problem, state, list(problem.local), problem.inner, problem.schedule.local_tol, step)


def fit_locals(problem, state, names: list, inner: int, tol: float, step=lambda name: 1.0) -> int:
    """Sweep `names` until the largest relative change of their mean parameters is below `tol`,
    at most `inner` sweeps; returns the sweeps taken. `step(name)` is each update's damping."""
    if inner == 1:
        for name in names:
            update(problem, state, name, step(name))
        return 1
    for sweep in range(1, inner + 1):
        before = [state.moments(n) for n in names]
        for name in names:
            update(problem, state, name, step(name))
        change = max((_relative_change(b, state.moments(n)) for b, n in zip(before, names)), default=0.0)
        if change < tol:
            return sweep
    return inner


def _relative_change(before: np.ndarray, after: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):  # -inf - -inf for a switched-off category
        change = np.abs(after - before) / (1.0 + np.abs(before))
    return float(np.nanmax(change)) if change.size else 0.0


def data_factors(problem, plan) -> set:
    """Names of the factors that draw data or local variables: their messages to the globals are
    sums over groups, scaled up from a minibatch. The others are the globals' priors."""
    return {f.name for f in problem.factors
            if f.factor.target.name in problem.model.data or f.factor.target.name in plan.locals}


def global_step(problem, state, name: str, scale: float, rho: float, data: set, transform=None) -> None:
    """λ ← (1 − ρ) λ + ρ (prior messages + scale · data messages) for the global `name`; the
    data messages pass through `transform(λ, m)` first when given (SSMF's eq. 26)."""
    prior = sum(f.message(state, name) for f in problem.neighbours[name] if f.name not in data)
    observed = sum(f.message(state, name) for f in problem.neighbours[name] if f.name in data)
    if transform is not None:
        observed = transform(state.natural[name], observed)
    target = prior + scale * observed
    family = state.families[name]
    new = (1 - rho) * state.natural[name] + rho * target if rho < 1.0 else target
    if name in problem.guarded or not np.all(family.valid(new)):  # a step that leaves the parameter space
        new = shrink_until_valid(family, state.natural[name], target, rho)
    state.set(name, new)
