"""The one update equation, λ_v ← (1 − β) λ_v + β · Σ_{f ∋ v} m_{f→v}, for one variable."""

from __future__ import annotations

import numpy as np

from ppl.infer.factors.gamma_cvi import shrink_until_valid
from ppl.infer.low_rank import GaussianSum
from ppl.infer.state import NumericalBreakdown


def update(problem, state, name: str, damping: float, received=None) -> None:
    """λ ← (1 − β) λ + β Σ m: one variable's update from all its factors' messages, solved in data
    space when the messages stay low-rank (Woodbury), step-halved when λ must stay valid.
    `received` = (factor names, Σ of their messages) summed elsewhere (a cluster's partitions)."""
    if received is not None:
        names, total = received
        total = total + sum(f.message(state, name) for f in problem.neighbours[name] if f.name not in names)
    elif name in problem.low_rank:  # started from an empty sum: a constant prior's array is not copied
        total = GaussianSum()
        for factor in problem.neighbours[name]:  # loops: sum()'s order, without a generator per message
            total = total + factor.message(state, name, factored=True)
    elif hasattr(problem.neighbours[name], "total"):  # a discrete chain's, formed in one array
        total = problem.neighbours[name].total(state, name)
    else:
        total = 0
        for factor in problem.neighbours[name]:
            total = total + factor.message(state, name)
    if isinstance(total, GaussianSum):  # a vector read through fewer rows than its dimension
        previous = state.factored.get(name)
        mixed = damping < 1.0 and previous is not None
        if mixed:
            total = previous.scaled(1 - damping) + total.scaled(damping)
        solved = total.solve(state.families[name], previous) if damping == 1.0 or mixed else None
        if solved is not None:
            state.set(name, solved, factored=total)
            return
        total = total.dense()
        damping = 1.0 if mixed else damping  # the damped λ already
    if name in problem.searched:  # a Newton step on a block with a log precision
        from ppl.infer.block_step import SMALLEST, STUCK, searched_step
        # Laplace's messages are derivatives at the point, not the gradient of its objective: not judged by it
        judged = all(getattr(f, "rule", None) != "laplace" for f in problem.neighbours[name])
        step = searched_step(problem, state, name, total, damping, judged)
        # from an accelerator's λ' no step is refused: the sweep's ELBO judges that point (ppl.infer.accelerate)
        refused = state.refused[name] = state.refused.get(name, 0) + 1 \
            if judged and not step and not state.extrapolated else 0
        # judged by the objective, a deterministic step that keeps λ is not at a fixed point (where the full
        # step keeps the objective); under CVI a noisy step may be refused, STUCK in a row may not
        if refused >= (STUCK if problem.stochastic else 1):
            running = f" in {STUCK} sweeps running" if problem.stochastic else ""
            raise NumericalBreakdown(name, f"no step along its natural gradient, down to 1/{round(1 / SMALLEST)} of "
                                     f"it, keeps the ELBO from falling{running} (its Newton step overshoots from "
                                     "here: data far from the prior's scale?); fit these variables without the block")
        return
    if name in problem.guarded or name in problem.damped:  # no step may leave the parameter space
        total = shrink_until_valid(state.families[name], state.natural[name], total, damping, name,
                                   lambda: nan_senders(problem, state, name))
    elif damping < 1.0:
        total = (1 - damping) * state.natural[name] + damping * total
    state.set(name, total)


def nan_senders(problem, state, name: str) -> str:
    """The factors whose messages to `name` hold NaN (asked again, on the way to an error)."""
    return ", ".join(f.name for f in problem.neighbours[name] if np.isnan(f.message(state, name)).any())
