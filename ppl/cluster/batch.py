"""Batch VMP on a cluster: the engine's sweep with the E-step where the data are.

A sweep is the engine's `batch_sweep`: every global once by the update equation (ρ = 1), then
every local. The globals' messages from the data are sums over groups, so each partition sends
its own sums and the cluster adds them up (`ClusterSource.round`); the client adds the priors'
messages and updates the globals. Globals whose data messages read a global updated before them
in the same sweep (mu then Lambda without `@joint`) wait for a round of their own (`waves`).
The E-step round returns the ELBO's local terms and the first wave's messages of the next sweep,
so that a sweep of a model with one wave (a mixture with `@joint`, LDA) is one round.

Start: the globals from a batch fit of a sample of groups scaled to all of them (SVI's start:
a start that does not need all the data in one place), then each partition's locals from their
priors and one E-step sweep (`start_at`). From the same start, one process gives the same
trace (tests/test_cluster.py). A model with no locals starts where one process starts
(`initialise`): the sample's fit is there to settle locals, and for a non-conjugate likelihood
its undamped sweeps could stop anywhere on an oscillation (an ELBO of -1.5e7 against -511).

SQUAREM (ppl.infer.accelerate) extrapolates the globals only: after a move the partitions refit
their locals by one E-step, keeping those before it (`worker.refit_task`), and a rejected step puts
them back (`worker.restore_task`), so the sweep from an extrapolated point is the one-process sweep
with every local refitted. Anderson's vectors would hold every local: refused (E369).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import numpy as np

from ppl.cluster import worker
from ppl.diagnostics import OptionError
from ppl.infer.access import Unsupported
from ppl.infer.accelerate import accelerator
from ppl.infer.initialise import initialise
from ppl.infer.schedule.plan import plan_for
from ppl.infer.schedule.steps import data_factors, random_globals
from ppl.infer.ridges import shift_after_update
from ppl.infer.update import update

START_GROUPS = 1000  # groups of the sample the starting globals are fitted to


def start_globals(problem, rng, source, groups: int = START_GROUPS) -> dict:
    """Natural parameters of the globals after SVI's start on `groups` groups of `source` (a
    `GroupedSource` or a `ClusterSource`: the same groups, the same globals)."""
    from ppl.infer.schedule.svi import SVI
    spec = replace(problem.schedule, batch=min(groups, source.groups))
    svi = SVI(replace(problem, schedule=spec), rng, source)
    svi.start()
    return svi.globals


def waves(problem, plan, data: set) -> list:
    """The globals in update order, cut where a global's data messages read a global of the
    current wave (its message must wait for that update)."""
    out, current = [], []
    for name in (n for n in problem.order if n in plan.globals):
        reads = {r for f in problem.neighbours[name] if f.name in data for r in f.reads}
        if current and reads & set(current):
            out.append(current)
            current = []
        current.append(name)
    return out + [current] if current else out


def global_terms(problem, state, plan, data: set) -> tuple:
    """(ELBO terms the client holds: the globals' priors and entropies, their squared se)."""
    pairs = [f.elbo_estimate(state) for f in problem.factors if f.name not in data]
    value = sum(p[0] for p in pairs) + sum(state.entropy(n) for n in plan.globals)
    return float(value), float(sum(p[1] ** 2 for p in pairs))


def _refuse_blocks(problem) -> None:
    """The Gaussian blocks a cluster cannot run: one with a Gamma member, whose step is searched on
    the block's ELBO terms, held by the partitions (E634); one with group effects, whose arrow holds
    every group while each partition binds its own (E635)."""
    from ppl.diagnostics import ModelError
    for block in problem.analysis.gaussian:
        family = problem.families.get(block.key)
        if family is None:  # left in mean field
            continue
        if block.key in problem.searched:
            member = block.logs(problem.model)[0]
            raise ModelError("E634", f"the Gaussian block {block.key} has Gamma member `{member}`: its searched "
                             "Newton step runs in one process, not on a cluster",
                             span=problem.model.variables[member].span,
                             hint=f"run in one process, or leave `{member}` out of the block (its Gamma q)")
        local = [m for m, place in family.placements.items() if place.local]
        if local:
            raise ModelError("E635", f"the Gaussian block {block.key} holds the group effects `{local[0]}`: its "
                             "arrow-shaped q spans every group, which a cluster's partitions split",
                             span=problem.model.variables[local[0]].span,
                             hint=f"run in one process, or leave `{local[0]}` out of the block (a block of the "
                                  "global variables runs on a cluster)")


def run_batch(problem, options, rng, progress, start, cluster):
    """`engine.Run` of batch VMP over `cluster`'s partitions (a `ClusterSource`)."""
    _refuse_blocks(problem)
    from ppl.infer.convergence import Monitor
    from ppl.infer.engine import ElboDecreaseWarning, Run, _damp, timed_out
    plan = plan_for(problem.model, problem.scopes, problem.latent, problem.schedule.span, problem.analysis.chains)
    data = data_factors(problem, plan)
    order = waves(problem, plan, data)
    first = order[0] if order else []
    globals_ = start_globals(problem, rng, cluster, START_GROUPS) if plan.locals else {}  # none: `initialise`'s
    state = initialise(problem, rng)
    if problem.schedule.init == "random":  # as the engine's `random_start`, after its initial state
        globals_.update(random_globals(problem, plan.globals, rng))
    for name, natural in globals_.items():
        state.set(name, natural.copy())
    cluster.open_run(problem.analysis, problem.schedule, int(rng.integers(2 ** 62)))
    notes, shrink, trace, trace_se = list(problem.notes), {}, [], []
    accel = _accelerator(problem, options, plan)
    monitor = Monitor(problem, options.tol, options.mean_tol, accelerated=accel is not None)
    converged = interrupted = False
    rebuilt, iteration = 0, 0

    def local_change():  # the locals' largest mean change, from the partitions
        return cluster.round(worker.change_task, _globals(state, plan)).change
    try:
        reply = cluster.round(worker.start_task, _globals(state, plan), first)
        elbo = global_terms(problem, state, plan, data)[0] + reply.elbo
        for iteration in range(1, options.max_iter + 1):
            def step(name):
                return options.damping * problem.step(name, iteration) * shrink.get(name, 1.0)
            plain = reply  # the first wave's messages at the plain point, where a rejected step returns
            if accel is not None:
                accel.before_sweep(state)
                if accel.fallback is not None:  # the globals moved: the partitions refit their locals there
                    reply = cluster.round(worker.refit_task, _globals(state, plan), first)
                    rebuilt += reply.rebuilt
            for k, wave in enumerate(order):
                if k:
                    reply = cluster.round(worker.messages_task, _globals(state, plan), wave)
                    rebuilt += reply.rebuilt
                for name in wave:
                    update(problem, state, name, step(name), received=(data, reply.messages[name]))
                    shift_after_update(problem, state, name)
            steps = {n: step(n) for n in plan.locals}
            reply = cluster.round(worker.estep_task, _globals(state, plan), steps, first)
            rebuilt += reply.rebuilt
            value, se2 = global_terms(problem, state, plan, data)
            new, se = value + reply.elbo, float(np.sqrt(se2 + reply.se2))
            if not np.isfinite(new) and (accel is None or accel.fallback is None):
                factor = next((f for f in problem.factors if f.name == reply.bad), None)
                raise Unsupported(f"the ELBO is not finite{f' at `{reply.bad}`' if reply.bad else ''}: the model and "
                                  "data give a degenerate posterior", factor.factor.span if factor else None)
            informative = True
            if accel is not None:  # an extrapolated step gone wrong (not finite) is rejected too
                new, informative = accel.after_sweep(state, new if np.isfinite(new) else -np.inf)
                if not informative:  # back at the plain point: its messages, and its locals on the partitions
                    reply = plain
                    if plan.locals:
                        rebuilt += cluster.round(worker.restore_task, _globals(state, plan)).rebuilt
            if se == 0.0 and new < elbo - 1e-9 * max(1.0, abs(elbo)):
                if problem.damped:
                    notes.extend(_damp(problem, shrink, iteration))
                elif problem.pure_vmp and options.damping == 1.0:
                    warnings.warn(f"ELBO decreased by {elbo - new:.3g} in sweep {iteration}", ElboDecreaseWarning,
                                  stacklevel=2)
            trace.append(new)
            trace_se.append(se)
            if progress is not None:
                try:
                    progress(iteration, new)
                except KeyboardInterrupt:  # at a sweep's end: the globals are a whole sweep's
                    interrupted = True
                    notes.append(f"interrupted after sweep {iteration}, not converged")
                    break
            elbo = new
            out_of_time = options.time_limit is not None and time.perf_counter() - start > options.time_limit
            if monitor.done(trace, state, informative, local=local_change, last=out_of_time or iteration == options.max_iter):
                converged = True
                break
            if out_of_time:
                notes.append(timed_out(monitor.report, options, iteration))
                break
        convergence = monitor.finish(state if interrupted else None)
    finally:
        cluster.close_run()
    for name in plan.locals:  # the locals of the client's few groups are not the posterior's
        state.natural.pop(name, None)
    notes.append(f"cluster: batch VMP over {cluster.partitions} partitions of {cluster.groups} groups of "
                 f"{plan.group_dim}, E-steps where the partitions are; the posterior holds the globals only"
                 + (f"; {rebuilt} partition state(s) rebuilt from the data and the globals after a lost worker"
                    if rebuilt else ""))
    return Run(state, trace, {}, converged, iteration, time.perf_counter() - start, warnings=notes,
               elbo=trace[-1] if trace else elbo, trace_se=trace_se, convergence=convergence,
               interrupted=interrupted, sampled=True)


def _accelerator(problem, options, plan):
    """SQUAREM on the globals (module docstring), as the engine chooses it (`accelerator`), or None."""
    if options.accelerate == "anderson":
        raise OptionError("E369", "Anderson acceleration (--accelerator anderson) on a cluster: its step extrapolates every local, "
                                  "and the locals are in the partitions", hint="use SQUAREM (the default)")
    if options.damping != 1.0 or problem.schedule.restarted:
        return None
    return accelerator(problem, options.accelerate, names=list(plan.globals), refit=False)


def _globals(state, plan) -> dict:
    return {n: state.natural[n] for n in plan.globals}
