"""What SSMF adds to a step (Hoffman 2014): globals drawn from q, the locals' exact conditional
given them by Gibbs sampling, and the reparameterised natural gradient of eq. 26.

- `pin_draws`: β̃ ~ q(β) for every global; the state's moments of β become t(β̃), so every
  message to a local is the conjugate message evaluated at the draw.
- `gibbs`: sweeps over the local block, each variable drawn from its complete conditional,
  which for a conjugate block is the conjugate message at the other variables' draws. The
  block's statistics are the averages of the conditionals' mean parameters after burn-in
  (Rao–Blackwellised), so the M-step reads them like mean-field moments.
- `ssmf_message`: the data message c (expected counts) to a Dirichlet global, turned into
  F(λ)⁻¹ Jᵀ c with J = ∂ log β/∂λ at the draw (eqs. 15, 35) and F the Fisher matrix solved by
  Sherman–Morrison (eq. 38), both at λ^(t−1) (the erratum on Alg. 1).
"""

from __future__ import annotations

import numpy as np

from scipy.special import logsumexp

from ppl.diagnostics import ModelError
from ppl.infer.access import Unsupported
from ppl.infer.factors.joint import group_key
from ppl.infer.gamma_shape import log_shape_derivative
from ppl.infer.pathwise import dirichlet_fisher_solve


def check_drawable(problem, names) -> None:
    """SSMF draws every global from q, and a `@joint` Normal–Gamma/Wishart factor has no sampler:
    refused at its annotation (E284, the analyzer's `@joint` code) before the first step."""
    for group in problem.analysis.groups:
        if group_key(group) in names and not hasattr(problem.families[group_key(group)], "sample"):
            note = next(n for f in problem.model.factors_of(group.mean) for n in f.annotations if n.rule == "joint")
            pair = f"Normal–{problem.model.variables[group.precision].dist}"
            schedule = problem.schedule.name
            raise ModelError("E284", f"`@joint` cannot apply to `{group.mean}` under `schedule {schedule}`: it draws "
                             f"the globals from q, and q({group.mean}, {group.precision}) is one {pair} factor that "
                             "ppl does not draw", span=note.span,
                             hint="use `schedule svi`, or drop `@joint` (q then factorises)")


def pin_draws(state, names, rng, reparameterised: bool = False) -> dict:
    """Draw each global from q and pin its moments at the draw; when `reparameterised`, returns
    name -> (None, d, ∂log g/∂α) for the Gamma variates g behind each Dirichlet draw, with
    d = (∂g/∂α)/Σg (eq. 35)."""
    draws = {}
    for name in names:
        family, natural = state.families[name], state.natural[name]
        if family.name == "Dirichlet":  # in log space: with α ≪ 1 most of a draw underflows
            alpha = natural + 1.0
            log_g = np.log(rng.gamma(alpha + 1.0)) + np.log(rng.random(alpha.shape)) / alpha
            log_total = logsumexp(log_g, axis=-1, keepdims=True)
            stats, draw = log_g - log_total, None
            if reparameterised:  # d log g/dα from log g: exact where g underflows
                dlog = log_shape_derivative(alpha, log_g)
                draw = (None, dlog * np.exp(stats), dlog)
        elif reparameterised:
            raise Unsupported(f"the ssmf step is reparameterised for Dirichlet globals; `{name}` is "
                              f"{family.name}: use `ssmf_a`")
        else:
            stats, draw = family.stats(family.sample(natural, rng)).reshape(natural.shape), None
        draws[name] = draw
        state.set(name, natural, moments=stats)
    return draws


def unpin(state, names) -> None:
    """Moments from q again (the M-step's prior messages read q, not the draw)."""
    for name in names:
        state.set(name, state.natural[name])


def ssmf_message(natural: np.ndarray, counts: np.ndarray, draw) -> np.ndarray:
    """F(λ)⁻¹ Jᵀ c for Dirichlet rows λ = α − 1 with data message c, per row:
    (Jᵀc)_j = c_j ∂log g_j/∂α_j − d_j Σ_i c_i, d_j = (∂g_j/∂α_j)/Σ g (eq. 35)."""
    _, d, dlog = draw
    jtc = np.where(counts > 0, counts * dlog, 0.0) - d * counts.sum(axis=-1, keepdims=True)
    return dirichlet_fisher_solve(natural + 1.0, jtc)


def gibbs(problem, state, order: list, sweeps: int, rng) -> int:
    """Gibbs sweeps over the locals `order` given the state's (pinned) globals; afterwards each
    local's moments are the average of its conditionals' mean parameters over the second half."""
    totals = {name: 0.0 for name in order}
    kept = 0
    for sweep in range(1, sweeps + 1):
        for name in order:
            family = state.families[name]
            natural = sum(f.message(state, name) for f in problem.neighbours[name])
            if sweep > sweeps // 2:
                totals[name] = totals[name] + family.to_mean(natural)
            draw = family.sample(natural, rng)
            state.set(name, natural, moments=family.stats(draw).reshape(natural.shape))
        kept += sweep > sweeps // 2
    for name in order:
        state.set(name, state.natural[name], moments=totals[name] / kept)
    return sweeps
