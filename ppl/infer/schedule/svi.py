"""Stochastic variational inference over a group plate (Hoffman, Blei, Wang & Paisley 2013).

Step t: take |B| groups (a fresh permutation of the groups each pass), bind the model to their
rows, fit their local blocks with the globals fixed (restarted from the prior), then move every
global by λ ← (1 − ρ_t) λ + ρ_t (η + (N_t/|B|) Σ_{n∈B} m_n) with ρ_t = (τ + t)^−κ and N_t =
min(t·|B|, N) (Hoffman 2014's ramp) or N. The trace holds the minibatch estimate of the ELBO at
the globals the step started from; the ELBO reported at the end is computed once on all the data.
"""

from __future__ import annotations


import time
from functools import partial

import numpy as np

from ppl.data.stream import GroupedSource
from ppl.diagnostics import DataError, ModelError
from ppl.infer.build import build_problem
from ppl.infer.convergence import Convergence
from ppl.infer.initialise import initialise
from ppl.infer.schedule.blocks import current_block, dirichlet_categorical
from ppl.infer.schedule.plan import plan_for
from ppl.infer.schedule.sampled import check_drawable, gibbs, pin_draws, ssmf_message, unpin
from ppl.infer.schedule.steps import data_factors, estep_order, fit_locals, global_step, random_globals

SMOOTHING = 10  # steps averaged on each side of the convergence test, at least


def step_size(spec, t: int) -> float:
    """ρ_t = β·(τ + t)^−κ, at most 1: β = 1 under svi and ssmf, τ = 0 under cvi (`@cvi`'s β·t^−κ)."""
    return min(1.0, spec.step * (spec.tau + t) ** -spec.kappa)


class Minibatches:
    """The groups of successive steps: each pass a new permutation, cut into batches of |B|."""

    def __init__(self, groups: int, size: int, rng):
        self.groups, self.size, self.rng = groups, min(size or groups, groups), rng  # None: all of them
        self.queue = np.empty(0, dtype=np.int64)
        self.visited = 0

    def next(self) -> np.ndarray:
        if len(self.queue) < self.size:
            self.queue = np.concatenate([self.queue, self.rng.permutation(self.groups)])
        batch, self.queue = self.queue[: self.size], self.queue[self.size:]
        self.visited += len(batch)
        return batch

    @property
    def passes(self) -> float:
        return self.visited / self.groups


class SVI:
    """One SVI run. `problem` is the model bound to all its data, or to one minibatch when the
    groups stream from disk (`source`, a `GroupedSource`); it gives the plan, and in memory the
    final ELBO and the locals of every group."""

    def __init__(self, problem, rng, source=None):
        # minibatches from a stream of their own: a count-weighted corpus and its token-expanded
        # form, which initialise different numbers of locals, visit the same groups
        batch_rng, rng = rng.spawn(2)
        self.problem, self.rng, self.spec = problem, rng, problem.schedule
        self.plan = plan_for(problem.model, problem.scopes, problem.latent, self.spec.span, problem.analysis.chains)
        if self.spec.name in ("ssmf", "ssmf_a"):
            check_drawable(problem, self.plan.globals)
        self.streamed = source is not None
        self.groups = source or GroupedSource.from_dataset(problem.model, problem.dataset, self.plan.group_column)
        refuse_empty_groups(self.groups)
        self.batches = Minibatches(self.groups.groups, self.spec.batch, batch_rng)
        self.globals: dict = {}
        self.local_order = estep_order(problem, self.plan.locals)

    def bind(self, groups: np.ndarray, fitted: bool = True):
        """The model bound to the rows of `groups`, its state with the current globals and locals
        from their priors; `fitted`: the E-step comes first (a fused block's assignments unset).
        A bound problem holds no reference cycle, so the last one is freed as soon as the caller
        drops it: memory stays O(|B|) with no collection between steps."""
        problem = build_problem(self.problem.model, self.groups.take(groups), self.problem.analysis,
                                self.spec)
        state = initialise(problem, self.rng, skip=self._refitted(problem) if fitted else ())
        for name, natural in self.globals.items():
            state.set(name, natural.copy())
        return problem, state

    def _refitted(self, problem) -> set:
        """The assignments of a fused block that the E-step writes before reading (LDA's z): not
        initialised, so a step draws nothing for them."""
        if self.spec.estep == "gibbs" or self.spec.local_sweeps < 2:
            return set()
        block = dirichlet_categorical(problem, self.local_order)
        return {block.z} if block is not None else set()

    def e_step(self, problem, state, estep: str = "vmp") -> int:
        """The local blocks of the bound groups (`minibatch_e_step`)."""
        return minibatch_e_step(problem, state, self.local_order, self.spec, self.rng, estep)

    def m_step(self, problem, state, scale: float, rho: float, draws: dict | None = None, fused=None) -> None:
        """Every global's step; `fused`: (topics, counts) of a fused block read before the state
        changed, else read here."""
        data = data_factors(problem, self.plan)
        topics, counts = fused if fused is not None else fused_counts(problem, state)[1]
        for name in self.plan.globals:
            transform = partial(ssmf_message, draw=draws[name]) if draws is not None else None
            global_step(problem, state, name, scale, rho, data, transform, observed=counts if name == topics else None)
            self.globals[name] = state.natural[name]

    def estimate(self, problem, state, scale: float, fused=None, local: float | None = None) -> float:
        """The ELBO from one minibatch: global terms once, local terms and entropies scaled. A
        fused LDA block gives its assignments' terms from its own normalisers (`local_bound`),
        or `local` when the caller computed them (`fused` the block; SSMF's `step`)."""
        data = data_factors(problem, self.plan)
        fused = fused or current_block(problem, state)
        skip = {fused.own.name, fused.data.name, fused.z} if fused is not None else set()
        if fused is not None and local is None:
            local = fused.local_bound(state)
        total = scale * local if fused is not None else 0.0
        total += sum(f.elbo(state) * (scale if f.name in data else 1.0) for f in problem.factors if f.name not in skip)
        return total + sum(state.entropy(n) * (scale if n in self.plan.locals else 1.0) for n in problem.latent
                           if n not in skip)

    def start(self, sweeps: int = 100) -> None:
        """Globals from a batch fit of one minibatch, scaled to the whole data: from the locals as
        `initialise` leaves them (symmetry broken), alternating M- and E-steps until the locals
        settle. Mixture components that one minibatch does not need are switched off here, where
        the stochastic steps would take hundreds of passes to do it. Under `init=random` the
        globals are drawn instead (`random_globals`) and the first step fits its locals to them."""
        if self.spec.init == "random":
            self.globals.update(random_globals(self.problem, self.plan.globals, self.rng))
            return
        groups = self.batches.next()
        problem, state = self.bind(groups, fitted=False)  # the M-step reads the initial locals first
        scale = self.groups.groups / len(groups)
        for _ in range(sweeps):
            before = {n: np.array(_settled(state, n)) for n in self.plan.globals}
            self.m_step(problem, state, scale, 1.0)
            self.e_step(problem, state)
            if all(np.allclose(before[n], _settled(state, n), rtol=self.spec.local_tol, atol=0) for n in before):
                break

    def step(self, t: int) -> float:
        """One step; returns the minibatch's ELBO estimate (under ssmf and ssmf-a, with the locals
        fitted at the draw: a plug-in, not a bound). The fused block's counts, the data message
        to the topics, are read before the globals are unpinned, as under svi."""
        groups = self.batches.next()
        problem, state = self.bind(groups)
        sampled = self.spec.name in ("ssmf", "ssmf_a")
        draws = pin_draws(state, self.plan.globals, self.rng, self.spec.name == "ssmf") if sampled else None
        self.e_step(problem, state, self.spec.estep)
        block, fused = fused_counts(problem, state)  # while the fused block's fit holds
        local = None
        if sampled:
            unpin(state, self.plan.globals)
            if block is not None:  # the assignments' terms at q(β), from the block's counts
                local = block.bound_at_q(state, fused[1])
        value = self.estimate(problem, state, self.groups.groups / len(groups), block, local)
        if not np.isfinite(value):  # as a batch sweep's: located at the first factor whose term is not
            raise problem.not_finite(state)
        seen = min(t * len(groups), self.groups.groups) if self.spec.ramp else self.groups.groups
        self.m_step(problem, state, seen / len(groups), step_size(self.spec, t),
                    draws if self.spec.name == "ssmf" else None, fused)
        return value

    def final_state(self):
        """All the data's locals fitted at the final globals: the posterior and the exact ELBO."""
        problem, state = self.problem, initialise(self.problem, self.rng)
        for name, natural in self.globals.items():
            state.set(name, natural.copy())
        self.e_step(problem, state)
        return state

    def streamed_elbo(self) -> tuple:
        """(ELBO, state of the globals) from one pass over the streamed groups in runs of
        consecutive groups of a minibatch's rows, at least `STREAMED_ROWS` (`chunks`): each run's
        locals fitted at the final globals, their terms summed; the globals' terms once. Memory:
        one run, as a step."""
        rows = max(STREAMED_ROWS, round(self.batches.size * self.groups.rows / max(self.groups.groups, 1)))
        local = 0.0
        for groups in chunks(self.groups.group_sizes, rows):
            problem, state = self.bind(groups)
            self.e_step(problem, state)
            local += self.estimate(problem, state, 1.0) - self._global_terms(problem, state)
        return local + self._global_terms(problem, state), state

    def _global_terms(self, problem, state) -> float:
        data = data_factors(problem, self.plan)
        return sum(f.elbo(state) for f in problem.factors if f.name not in data) + \
            sum(state.entropy(n) for n in self.plan.globals)


def fused_counts(problem, state) -> tuple:
    """(block, (topics, counts)) of the fused block whose fit `state` still holds, its pairs'
    counts being the data message to the topics; (None, (None, None)) without one."""
    block = current_block(problem, state)
    return block, (block.topics, block.topic_counts(state)) if block is not None else (None, None)


def refuse_empty_groups(groups) -> None:
    """A minibatch of groups with no rows has nothing to fit (a loop over none of its rows, a
    chain with no sequence): levels of the group column that no row takes are refused (E810)."""
    sizes = getattr(groups, "group_sizes", None)  # a cluster's partitions hold their groups' rows
    empty = np.flatnonzero(sizes == 0) if sizes is not None else ()
    if len(empty):
        labels = groups.levels[groups.group]
        shown = ", ".join(str(labels[i]) for i in empty[:5]) + (", ..." if len(empty) > 5 else "")
        raise DataError("E810", f"`{groups.group}` has levels that no row takes ({shown}; {len(empty)} of "
                        f"{groups.groups}): a stochastic schedule fits minibatches of these groups, and an empty one "
                        "has nothing to fit", column=groups.group, source=groups.source,
                        hint=f"give `{groups.group}` only the levels its rows take, or use `schedule batch`")


def minibatch_e_step(problem, state, order: list, spec, rng, estep: str = "vmp") -> int:
    """The local blocks of a minibatch's groups, starting from the globals: mean field (or CVB0)
    to convergence, or Gibbs sweeps over their exact conditional; where the data are, on a
    cluster, too (`ppl.cluster.worker`). A data variable with missing cells is local only in the
    groups that miss some: the others observe it whole, and their E-step leaves it out."""
    latent = set(problem.latent)
    order = [n for n in order if n in latent]
    if estep == "gibbs":
        fit_locals(problem, state, order, 1, spec.local_tol)  # a start for the chain
        return gibbs(problem, state, order, spec.local_sweeps, rng)
    return fit_locals(problem, state, order, spec.local_sweeps, spec.local_tol, estep=estep)


def settled(trace: list, window: int, tol: float) -> bool:
    """The mean ELBO estimate of the last `window` steps is within its noise (one standard error
    of the difference) or `tol` relative of the mean of the `window` steps before."""
    if len(trace) < 2 * window:
        return False
    recent, before = np.asarray(trace[-window:]), np.asarray(trace[-2 * window:-window])
    noise = np.sqrt((recent.var(ddof=1) + before.var(ddof=1)) / window)
    return abs(recent.mean() - before.mean()) <= max(noise, tol * abs(recent.mean()))


def refuse_row_minibatches(problem) -> None:
    """E600 at a `@cvi(minibatch=B)` statement under a stochastic schedule: its rows would be
    subsampled again inside each step's groups, and the locals fitted to a sample of their rows."""
    spec = problem.schedule
    for factor in problem.factors:
        if getattr(factor, "batch", None) is not None:
            raise ModelError("E600", f"`{factor.name}` takes minibatches of its rows (`@cvi(minibatch=...)`) while "
                             f"the schedule `{spec.name.replace('_', '-')}` takes minibatches of groups",
                             span=factor.factor.span,
                             hint=f"drop `minibatch` from the annotation; `schedule cvi(minibatch={spec.batch})` "
                                  "is doubly stochastic CVI over the groups")


STREAMED_ROWS = 10_000  # rows bound at once by the final pass over streamed data, at least


def chunks(sizes, rows: int) -> list:
    """The groups 0, 1, ... cut into runs of consecutive groups of at most `rows` rows each (a
    larger group alone): the final pass's chunks, whose memory is that of a minibatch step."""
    ends, runs, start = np.cumsum(sizes), [], 0
    while start < len(ends):  # one iteration per run, not per group
        done = ends[start - 1] if start else 0
        stop = max(int(np.searchsorted(ends, done + rows, "right")), start + 1)
        runs.append(np.arange(start, stop))
        start = stop
    return runs


def run_svi(problem, options, rng, progress, start: float, source=None):
    """`engine.Run` of an SVI schedule: steps until the ELBO estimate settles (`settled`, over
    windows of a pass) or, when asked, for `passes` passes over the groups; at most `max_iter`
    steps or the time limit.
    Streamed groups (`source`) leave a posterior of the globals only."""
    from ppl.infer.engine import Run, timed_out
    refuse_row_minibatches(problem)
    svi = source.stepper(problem, rng) if hasattr(source, "stepper") else SVI(problem, rng, source)
    svi.start()
    trace, converged, t, timed = [], False, 0, None
    passes = svi.spec.passes
    window = max(SMOOTHING, -(-svi.groups.groups // svi.batches.size))
    for t in range(1, options.max_iter + 1):
        trace.append(svi.step(t))
        if progress is not None:
            progress(t, trace[-1])
        if passes is not None:  # a number of passes asked for is run (Hoffman's protocol)
            if svi.batches.passes >= passes:
                converged = True
                break
        elif settled(trace, window, options.tol):
            converged = True
            break
        if options.time_limit is not None and time.perf_counter() - start > options.time_limit:
            timed = Convergence("smoothed trace")
            break
    stepped = time.perf_counter() - start
    if svi.streamed:
        elbo, state = svi.streamed_elbo()
        for name in svi.plan.locals:  # the locals of the last chunk are not the posterior's
            state.natural.pop(name, None)
        problem = svi.bind(np.arange(min(svi.groups.groups, svi.batches.size)))[0]
    else:
        state = svi.final_state()
        elbo = problem.exact_elbo(state)  # the steps' estimates may stay finite where it is not
    seconds = time.perf_counter() - start
    recent = np.asarray(trace[-window:])
    se = float(recent.std(ddof=1) / np.sqrt(len(recent))) if len(recent) > 1 else 0.0
    notes = list(problem.notes) + [
        f"{svi.spec.name.replace('_', '-')}: {t} steps of {svi.batches.size} groups ({svi.batches.passes:.3g} passes over {svi.groups.groups} "
        f"groups of {svi.plan.group_dim}), {1000 * stepped / max(svi.batches.visited, 1):.3g} ms per group; "
        f"{svi.plan.describe()}",
        f"the trace holds minibatch estimates of the ELBO (the mean of the last {len(recent)}: "
        f"{recent.mean():.6g} ± {se:.2g}); the ELBO reported is computed once more at the end, on all the data"]
    spread = float(recent.std(ddof=1)) if len(recent) > 1 else 0.0  # one estimate's standard error, about
    if svi.streamed:
        where = getattr(svi.groups, "where", "the groups streamed from disk")
        notes.append(f"{where}: the posterior holds the globals only; the ELBO is one more "
                     f"pass over all {svi.groups.groups} groups ({seconds - stepped:.3g} s)")
    if timed is not None:
        notes.append(timed_out(timed, options, t, unit="step"))
    terms = {} if svi.streamed else problem.elbo_terms(state)
    return Run(state, trace, terms, converged, t, seconds, warnings=notes, elbo=elbo,
               trace_se=[spread] * len(trace), convergence=timed)


def _settled(state, name: str) -> np.ndarray:
    """What the start watches settle: a global's moments, or the natural parameter of a Gaussian
    block (whose moments are its solved blocks, not one array)."""
    moments = state.moments(name)
    return moments if isinstance(moments, np.ndarray) else state.natural[name]
