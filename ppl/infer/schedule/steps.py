"""The two halves of every schedule's step, on a `Problem` bound to the groups the step visits:

- E-step: sweep the local variables, globals fixed, until the largest change of a local mean
  parameter is below a tolerance (the per-document inner loop of Blei et al. 2003 and of every
  online LDA);
- M-step: each global takes λ ← (1 − ρ) λ + ρ (Σ prior messages + scale · Σ data messages),
  with scale = N/|B| for a minibatch (Hoffman et al. 2013, eq. 13) and 1 in batch.

Batch VMP is the M-step with ρ = 1 and scale 1 followed by the E-step over every group.
A restarted E-step (`ScheduleSpec.restarted`) first sets each local back to its prior message,
so the locals are a function of the globals alone, as in a minibatch step.
"""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import ModelError
from ppl.infer.factors.gamma_cvi import shrink_until_valid
from ppl.infer.factorial_levels import shift_levels
from ppl.infer.initialise import initialise
from ppl.infer.ridges import shift_after_update
from ppl.infer.schedule.blocks import dirichlet_categorical
from ppl.infer.update import nan_senders, update

RANDOM_SHAPE = 100.0  # Dirichlet concentrations ~ Gamma(100, 1/100): mean 1, sd 0.1 (scikit-learn's LDA)


def batch_sweep(problem, state, step) -> int:
    """One sweep of batch VMP: every global once (M-step, ρ = 1, scale 1), then the local blocks
    of every group to convergence (E-step); `step(name)` is each update's damping. Returns the
    E-step's sweeps."""
    if problem.kernel is not None and step(problem.order[0]) == 1.0:  # a kernel's problem has no
        problem.kernel.sweep(state)  # per-variable steps: one damping for all. The same updates, fused
        return 1
    joint = {max(names, key=problem.order.index): (factor, names) for factor, names in problem.levels
             if all(step(n) == 1.0 for n in names)} if problem.levels else {}
    for name in problem.order:
        if name not in problem.local:
            update(problem, state, name, step(name))
            shift_after_update(problem, state, name)
        if name in joint:
            shift_levels(problem, state, *joint[name])
    return batch_e_step(problem, state, step)


def batch_e_step(problem, state, step=lambda name: 1.0) -> int:
    """The locals of every group, from the prior when the schedule restarts them (then those that
    read a global go first); carried over, in the sweep order of plain VMP."""
    if not problem.local and problem.schedule.estep != "cvb0":  # no locals: nothing to fit (cvb0 raises E297)
        return 1
    order = list(problem.local)
    if problem.schedule.restarted:
        restart_locals(problem, state, problem.local)
        order = estep_order(problem, problem.local)
    return fit_locals(problem, state, order, problem.inner, problem.schedule.local_tol, step, problem.schedule.estep)


def locals_from_globals(problem, state, names) -> None:
    """One E-step of the locals `names` (in sweep order) at the current globals and other locals,
    the fused kernel's when it has one: a sweep from variables moved by an accelerator then reads
    these locals fitted to them, so the sweep is the map of the moved variables alone
    (ppl.infer.accelerate)."""
    refitted = [n for n in problem.local if n in names]
    if getattr(problem.kernel, "e_step", None) is not None:
        problem.kernel.e_step(state, refitted)
    else:
        fit_locals(problem, state, refitted, problem.inner, problem.schedule.local_tol, estep=problem.schedule.estep)


def random_start(problem, state, rng) -> None:
    """`init=random` in batch: the globals drawn (`random_globals`), then the locals fitted to
    them, so that the first M-step reads responsibilities of the random topics."""
    names = [n for n in problem.latent if n not in problem.local]
    for name, natural in random_globals(problem, names, rng).items():
        state.set(name, natural)
    batch_e_step(problem, state)


def estep_order(problem, local) -> list:
    """An E-step starts from the globals: the locals that share a factor with one go first (the
    assignments z before the proportions theta of LDA), each group in its given order."""
    globals_ = set(problem.latent) - set(local)
    touches = {n for f in problem.factors if set(f.reads) & globals_ for n in f.reads}
    return [n for n in local if n in touches] + [n for n in local if n not in touches]


def restart_locals(problem, state, local) -> None:
    """Each local variable from its own statement's message again (dependency order): its prior,
    given the other locals already restarted."""
    for name in (n for n in problem.latent if n in local):
        if problem.own(name):
            state.set(name, problem.prior_message(state, name))


def random_globals(problem, names, rng) -> dict:
    """`init=random`: name -> natural parameters of each Dirichlet global, its concentrations
    drawn from Gamma(100, 1/100): nearly uniform rows whose symmetry the first E-step breaks
    (scikit-learn's start for LDA's topics). A model with no Dirichlet global: E296."""
    drawn = [n for n in names if problem.families[n].name == "Dirichlet"]
    if not drawn:
        raise ModelError("E296", "`init=random` draws Dirichlet globals; this model has none "
                         f"(globals: {', '.join(names) or 'none'})", span=problem.schedule.span,
                         hint="leave `init` out: the globals then start from the locals' first responsibilities")
    size = {n: (int(np.prod(problem.shapes[n], dtype=np.int64)), problem.families[n].size) for n in drawn}
    return {n: rng.gamma(RANDOM_SHAPE, 1.0 / RANDOM_SHAPE, size=size[n]) - 1.0 for n in drawn}
def fit_locals(problem, state, names: list, inner: int, tol: float, step=lambda name: 1.0,
               estep: str = "vmp") -> int:
    """Sweep `names` until the largest relative change of their mean parameters is below `tol`,
    at most `inner` sweeps; returns the sweeps taken. `step(name)` is each update's damping. A
    Dirichlet–Categorical block (LDA's θ, z) runs fused (`blocks`), and only it takes `cvb0`."""
    block = dirichlet_categorical(problem, names) if inner > 1 or estep == "cvb0" else None
    if estep == "cvb0" and block is None:
        raise ModelError("E297", "`estep=cvb0` runs on a local block of a Dirichlet and a Categorical that it "
                         f"indexes (LDA's theta and z); this model's locals are {', '.join(names) or 'none'}",
                         span=problem.schedule.span, hint="use `estep=vmp`")
    if block is not None and all(step(n) == 1.0 for n in names):
        return block.fit(state, inner, tol, estep)
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
    measured = change[~np.isnan(change)]  # all NaN when every category is switched off
    return float(measured.max()) if measured.size else 0.0


def data_factors(problem, plan) -> set:
    """Names of the factors that draw data or local variables: their messages to the globals are
    sums over groups, scaled up from a minibatch. The others are the globals' priors."""
    return {f.name for f in problem.factors
            if f.factor.target.name in problem.model.data or f.factor.target.name in plan.locals}


def start_at(problem, rng, globals_: dict, plan):
    """The state with the globals at `globals_` and each local from its prior and one E-step
    sweep (`estep_order`), or the batch E-step when it restarts the locals: where a cluster's
    partitions start, and how one is rebuilt from its data and the current globals after its
    worker is lost."""
    state = initialise(problem, rng)
    state.rng = rng
    for name, natural in globals_.items():
        state.set(name, natural.copy())
    if problem.schedule.restarted:
        batch_e_step(problem, state)
    else:
        fit_locals(problem, state, estep_order(problem, plan.locals), 1, problem.schedule.local_tol)
    return state


def data_message(problem, state, name: str, data: set):
    """Σ of the messages to `name` from the factors in `data` (a sum over groups)."""
    return sum(f.message(state, name) for f in problem.neighbours[name] if f.name in data)


def global_step(problem, state, name: str, scale: float, rho: float, data: set, transform=None,
                observed=None) -> None:
    """λ ← (1 − ρ) λ + ρ (prior messages + scale · data messages) for the global `name`; the
    data messages pass through `transform(λ, m)` first when given (SSMF's eq. 26). `observed`:
    the data messages when they were summed elsewhere (a cluster's partitions). Softmax class
    weights then take their shift step (ppl.infer.softmax_shift), as in a batch sweep."""
    prior = sum(f.message(state, name) for f in problem.neighbours[name] if f.name not in data)
    if observed is None:
        observed = data_message(problem, state, name, data)
    if transform is not None:
        observed = transform(state.natural[name], observed)
    target = prior + scale * observed
    family = state.families[name]
    new = (1 - rho) * state.natural[name] + rho * target if rho < 1.0 else target
    if name in problem.guarded or not np.all(family.valid(new)):  # a step that leaves the parameter space
        new = shrink_until_valid(family, state.natural[name], target, rho, name,
                                 lambda: nan_senders(problem, state, name))
    state.set(name, new)
    shift_after_update(problem, state, name)  # the priors alone see the shift: exact whatever the minibatch
